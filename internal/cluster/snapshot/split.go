package snapshot

import (
	"bufio"
	"errors"
	"io"
)

// jsonSplitter cuts a JSON stream into the raw text of its values without
// decoding them. Reading a gigabyte List of pods, the reader is the one
// part that cannot be spread over the cores: it only has to find where
// each item ends, and the workers' decode checks the item is valid JSON.
// A stream whose structure it cannot follow gives errNotStreamable, and the
// whole-file decoder then names the exact error.
type jsonSplitter struct {
	br *bufio.Reader
}

var errBadStructure = errors.New("unexpected JSON structure")

// peek returns the next byte that is not white space, without consuming it.
func (s *jsonSplitter) peek() (byte, error) {
	for {
		c, err := s.br.ReadByte()
		if err != nil {
			return 0, err
		}
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c, s.br.UnreadByte()
	}
}

// expect consumes the next byte that is not white space, which must be c.
func (s *jsonSplitter) expect(c byte) error {
	got, err := s.peek()
	if err != nil {
		return unexpectedEOF(err)
	}
	if got != c {
		return errBadStructure
	}
	_, err = s.br.ReadByte()
	return err
}

// value appends the text of the next value to dst.
func (s *jsonSplitter) value(dst []byte) ([]byte, error) {
	first, err := s.peek()
	if err != nil {
		return dst, unexpectedEOF(err)
	}
	switch first {
	case '{', '[', '"':
		return s.nested(dst)
	}
	return s.scalar(dst)
}

// nested appends an object, array or string: up to the bracket or quote
// that closes the first one.
func (s *jsonSplitter) nested(dst []byte) ([]byte, error) {
	depth, inString, escaped := 0, false, false
	for {
		buf, err := s.br.Peek(max(s.br.Buffered(), 1))
		if len(buf) == 0 {
			return dst, unexpectedEOF(err)
		}
		for i, c := range buf {
			if inString {
				switch {
				case escaped:
					escaped = false
				case c == '\\':
					escaped = true
				case c == '"':
					inString = false
					if depth == 0 {
						return s.take(dst, buf[:i+1])
					}
				}
				continue
			}
			switch c {
			case '"':
				inString = true
			case '{', '[':
				depth++
				if depth >= maxItemNesting {
					return dst, errNotStreamable
				}
			case '}', ']':
				depth--
				if depth == 0 {
					return s.take(dst, buf[:i+1])
				}
			}
		}
		dst, _ = s.take(dst, buf)
	}
}

// scalar appends a number, true, false or null: up to the next delimiter.
func (s *jsonSplitter) scalar(dst []byte) ([]byte, error) {
	for {
		buf, err := s.br.Peek(max(s.br.Buffered(), 1))
		if len(buf) == 0 {
			if err == io.EOF {
				return dst, nil
			}
			return dst, err
		}
		for i, c := range buf {
			switch c {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				return s.take(dst, buf[:i])
			}
		}
		dst, _ = s.take(dst, buf)
	}
}

func (s *jsonSplitter) take(dst, buf []byte) ([]byte, error) {
	dst = append(dst, buf...)
	_, err := s.br.Discard(len(buf))
	return dst, err
}

func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
