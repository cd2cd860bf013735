package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// decodeGeneric is the floor of `kedge plan --snapshot`: what a program
// that knows nothing of Kubernetes spends reading the same files with the
// standard library, every object decoded into `any` on one core. List
// items are decoded one by one and dropped, as any program streaming a
// gigabyte List would; it returns how many objects it read.
func decodeGeneric(dir string) (int, error) {
	runtime.GOMAXPROCS(1)
	objects := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.EqualFold(filepath.Ext(p), ".json") {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		n, err := decodeGenericStream(json.NewDecoder(bufio.NewReaderSize(f, 1<<20)))
		objects += n
		return err
	})
	return objects, err
}

// decodeGenericStream reads a sequence of top-level objects; the items of
// a Kubernetes List are each decoded on their own.
func decodeGenericStream(dec *json.Decoder) (int, error) {
	n := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if tok != json.Delim('{') {
			return n, errors.New("not a JSON object")
		}
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				return n, err
			}
			if key != "items" {
				var v any
				if err := dec.Decode(&v); err != nil {
					return n, err
				}
				continue
			}
			if _, err := dec.Token(); err != nil { // [
				return n, err
			}
			for dec.More() {
				var v any
				if err := dec.Decode(&v); err != nil {
					return n, err
				}
				n++
			}
			if _, err := dec.Token(); err != nil { // ]
				return n, err
			}
		}
		if _, err := dec.Token(); err != nil { // }
			return n, err
		}
	}
}
