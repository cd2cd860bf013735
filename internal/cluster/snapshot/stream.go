package snapshot

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/kedge-io/kedge/internal/cluster/trim"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/yamlguard"
)

// streamThreshold is the file size from which a YAML snapshot file is
// decoded as a stream. The pods of a large cluster are one List of a
// gigabyte or more: converted as one YAML document, they would take tens of
// gigabytes and one core. Streaming decodes the List's items one by one,
// spread over the cores, and never holds the file.
var streamThreshold int64 = 4 << 20

// streamChunkBytes is about how much YAML one worker decodes at a time.
const streamChunkBytes = 1 << 20

// errNotStreamable says a file has a shape the streaming decoder does not
// handle (or an error); the whole-file decoder then reads it, so results
// and error messages are exactly what it gives.
var errNotStreamable = errors.New("not streamable")

// streamYAML decodes a YAML snapshot file in document order, with each
// top-level `items:` block sequence split into its items. Documents are
// split exactly as k8s.io/apimachinery's YAMLReader splits them (lines
// starting with "---", line ends normalised to "\n"). Anything unusual
// (aliases across items, items not at column 0, a malformed document)
// returns errNotStreamable.
func streamYAML(r io.Reader, size int64) (*objects.Set, error) {
	return stream(r, size, (*streamDecoder).run)
}

// stream runs one of the decoder's readers over r and collects the Set;
// a shape its workers could not decode is errNotStreamable.
func stream(r io.Reader, size int64, run func(*streamDecoder, io.Reader) error) (*objects.Set, error) {
	d := newStreamDecoder(size)
	err := run(d, r)
	set, werr := d.finish()
	if err != nil {
		return nil, err
	}
	if werr != nil {
		return nil, errNotStreamable
	}
	return set, nil
}

// chunk is a run of YAML texts decoded by one worker: either List items
// (each one's leading "-" already blanked) or one whole document.
type chunk struct {
	seq   int
	data  []byte
	ends  []int // end offset of each text in data
	whole bool  // a whole document: addObject on it, skipping empty ones
	json  bool  // the texts are JSON
}

type streamDecoder struct {
	work    chan *chunk
	wg      sync.WaitGroup
	seq     int
	pending *chunk
	json    bool // items are JSON, not YAML
	trim    *trim.Trimmer
	size    int64 // of the input, to size the result

	mu     sync.Mutex
	failed bool
	// set holds the chunks decoded so far in order; parts, those decoded
	// ahead of an earlier one; next is the chunk set waits for.
	set   *objects.Set
	parts map[int]decodedChunk
	next  int
}

type decodedChunk struct {
	set   *objects.Set
	bytes int
}

func newStreamDecoder(size int64) *streamDecoder {
	d := &streamDecoder{
		work: make(chan *chunk, 2*runtime.GOMAXPROCS(0)), trim: trim.New(), size: size,
		set: &objects.Set{}, parts: map[int]decodedChunk{},
	}
	for range runtime.GOMAXPROCS(0) {
		d.wg.Add(1)
		go d.worker()
	}
	return d
}

func (d *streamDecoder) worker() {
	defer d.wg.Done()
	for c := range d.work {
		set, err := decodeChunk(c, d.trim)
		d.mu.Lock()
		if err != nil {
			d.failed = true
		} else {
			d.parts[c.seq] = decodedChunk{set, len(c.data)}
			d.mergeReady()
		}
		d.mu.Unlock()
	}
}

// mergeReady appends the chunks that are next in order to the result as
// soon as they are decoded, so the objects of a gigabyte List never exist
// twice (in the chunks and in the result). Callers hold d.mu.
func (d *streamDecoder) mergeReady() {
	for {
		p, ok := d.parts[d.next]
		if !ok {
			return
		}
		delete(d.parts, d.next)
		d.next++
		s, src := d.set, p.set
		appendSized(&s.Namespaces, src.Namespaces, p.bytes, d.size)
		appendSized(&s.Pods, src.Pods, p.bytes, d.size)
		appendSized(&s.ConfigMaps, src.ConfigMaps, p.bytes, d.size)
		appendSized(&s.ReplicaSets, src.ReplicaSets, p.bytes, d.size)
		appendSized(&s.Deployments, src.Deployments, p.bytes, d.size)
		appendSized(&s.StatefulSets, src.StatefulSets, p.bytes, d.size)
		appendSized(&s.DaemonSets, src.DaemonSets, p.bytes, d.size)
		appendSized(&s.Jobs, src.Jobs, p.bytes, d.size)
		appendSized(&s.CronJobs, src.CronJobs, p.bytes, d.size)
		appendSized(&s.Rollouts, src.Rollouts, p.bytes, d.size)
		appendSized(&s.MutatingWebhookConfigurations, src.MutatingWebhookConfigurations, p.bytes, d.size)
		appendSized(&s.Applications, src.Applications, p.bytes, d.size)
		appendSized(&s.Kustomizations, src.Kustomizations, p.bytes, d.size)
		appendSized(&s.GitRepositories, src.GitRepositories, p.bytes, d.size)
		appendSized(&s.HelmRepositories, src.HelmRepositories, p.bytes, d.size)
		appendSized(&s.ProxyConfigs, src.ProxyConfigs, p.bytes, d.size)
		appendSized(&s.Canaries, src.Canaries, p.bytes, d.size)
		appendSized(&s.Nodes, src.Nodes, p.bytes, d.size)
		appendSized(&s.AuthorizationPolicies, src.AuthorizationPolicies, p.bytes, d.size)
		appendSized(&s.Gateways, src.Gateways, p.bytes, d.size)
		appendSized(&s.OCIRepositories, src.OCIRepositories, p.bytes, d.size)
		appendSized(&s.AppProjects, src.AppProjects, p.bytes, d.size)
		appendSized(&s.PeerAuthentications, src.PeerAuthentications, p.bytes, d.size)
		appendSized(&s.RequestAuthentications, src.RequestAuthentications, p.bytes, d.size)
		appendSized(&s.EnvoyFilters, src.EnvoyFilters, p.bytes, d.size)
		appendSized(&s.WasmPlugins, src.WasmPlugins, p.bytes, d.size)
		appendSized(&s.VirtualServices, src.VirtualServices, p.bytes, d.size)
		appendSized(&s.HTTPRoutes, src.HTTPRoutes, p.bytes, d.size)
		appendSized(&s.Services, src.Services, p.bytes, d.size)
	}
}

// appendSized appends src to *dst. The first time, the slice is made as
// large as the whole input will need if it goes on like this chunk
// (chunkBytes of total), so it is not copied as it grows; unless that
// would be more than a quarter of the input's size, which a List mixing
// kinds could mislead it into.
func appendSized[T any](dst *[]T, src []T, chunkBytes int, total int64) {
	if len(src) == 0 {
		return
	}
	if *dst == nil && chunkBytes > 0 {
		estimate := int(float64(len(src)) * float64(total) / float64(chunkBytes) * 1.05)
		var zero T
		if estimate > len(src) && int64(estimate)*int64(unsafe.Sizeof(zero)) <= total/4 {
			*dst = make([]T, 0, estimate)
		}
	}
	*dst = append(*dst, src...)
}

func decodeChunk(c *chunk, tr *trim.Trimmer) (*objects.Set, error) {
	set := &objects.Set{}
	start := 0
	for _, end := range c.ends {
		raw := c.data[start:end]
		start = end
		if !c.json {
			var err error
			if raw, err = yamlToJSON(raw); err != nil {
				return nil, err
			}
		}
		if c.whole && isEmptyDocument(raw) {
			continue
		}
		if err := addObject(set, raw, tr); err != nil {
			return nil, err
		}
	}
	return set, nil
}

func (d *streamDecoder) failedYet() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.failed
}

// finish waits for the workers and returns what they decoded, in order.
func (d *streamDecoder) finish() (*objects.Set, error) {
	close(d.work)
	d.wg.Wait()
	if d.failed || len(d.parts) > 0 || d.next != d.seq {
		return nil, errNotStreamable
	}
	return d.set, nil
}

func (d *streamDecoder) send(c *chunk) {
	c.seq = d.seq
	d.seq++
	d.work <- c
}

// addItem appends one List item to the pending chunk, sending the chunk
// when it is full.
func (d *streamDecoder) addItem(item []byte) error {
	if d.pending == nil {
		d.pending = &chunk{data: make([]byte, 0, streamChunkBytes+len(item)), json: d.json}
	}
	c := d.pending
	c.data = append(c.data, item...)
	c.ends = append(c.ends, len(c.data))
	if len(c.data) >= streamChunkBytes {
		return d.flush()
	}
	return nil
}

// flush sends the pending chunk; it stops the read early once a worker
// has failed, since the whole file is then read again the slow way.
func (d *streamDecoder) flush() error {
	if d.pending != nil {
		d.send(d.pending)
		d.pending = nil
	}
	if d.failedYet() {
		return errNotStreamable
	}
	return nil
}

// document states of the line scanner.
const (
	inHeader   = iota // top-level keys of a document
	inItems           // the block sequence under a top-level "items:"
	afterItems        // top-level keys after the items
)

// maxItemNesting bounds how deeply a streamed item may nest. In its List
// an item sits two levels deeper than alone, and the YAML and JSON
// decoders both stop at 10,000 levels: an item near that limit decodes
// alone but not in its List, so it is left to the whole-file decoder.
const maxItemNesting = 9000

// docScan collects one document: its header lines (everything but the
// items) and whether it had an items block.
type docScan struct {
	state  int
	header []byte
	// preItems is how much of header came before "items:". It must parse
	// alone: then no quoted scalar or flow collection it opened runs on
	// through the items, as one may in the whole document.
	preItems int
	// unsplittable says a header line may mean something else once the
	// items are cut out of its document; the document is then only read
	// whole if it turns out to be a List.
	unsplittable bool
	item         []byte
	inItem       bool
	// indent is the column the current item's content starts at; 0 until
	// known (an item whose first line is a bare "-").
	indent int
	items  int
	// width and brackets of the current item bound how deeply it nests:
	// block nesting needs a column per level, flow nesting a bracket.
	width, brackets int
}

// empty tells whether the document has no line yet: YAMLReader keeps a
// separator line that opens a document as the document's first line.
func (doc *docScan) empty() bool {
	return doc.state == inHeader && len(doc.header) == 0
}

// contentColumn is where an item's content starts on its "-" line, or 0
// when the line holds nothing but the dash (and a comment).
func contentColumn(line []byte) int {
	i := 1
	for line[i] == ' ' {
		i++
	}
	if line[i] == '\n' || line[i] == '#' {
		return 0
	}
	return i
}

// opensDocument tells whether a separator line that YAMLReader keeps (as
// the first line of a document) is a YAML document start marker, which
// means the same as dropping the line: "---" followed by blanks and
// perhaps a comment. "---#" or "---" and a form feed are plain text.
func opensDocument(line []byte) bool {
	rest := line[3:]
	if rest[0] == '\n' {
		return true
	}
	if rest[0] != ' ' && rest[0] != '\t' {
		return false
	}
	rest = bytes.TrimLeft(rest, " \t")
	return rest[0] == '\n' || rest[0] == '#'
}

// scanLine counts a line's flow brackets and tells whether it holds a
// line break that YAML sees and a line reader does not ('\r' alone, NEL,
// LS, PS) or a byte order mark, which YAML skips at the start of a line.
// Either can turn an indented line into one at column 0, which cut out of
// its document parses otherwise.
func scanLine(line []byte) (brackets int, hiddenBreak bool) {
	for i, c := range line {
		switch {
		case c == '[' || c == '{':
			brackets++
		case c == '\r':
			hiddenBreak = true
		case c == 0xc2:
			hiddenBreak = hiddenBreak || bytes.HasPrefix(line[i+1:], []byte{0x85})
		case c == 0xe2:
			hiddenBreak = hiddenBreak || bytes.HasPrefix(line[i+1:], []byte{0x80, 0xa8}) ||
				bytes.HasPrefix(line[i+1:], []byte{0x80, 0xa9})
		case c == 0xef:
			hiddenBreak = hiddenBreak || bytes.HasPrefix(line[i+1:], []byte{0xbb, 0xbf})
		}
	}
	return brackets, hiddenBreak
}

// splitsBadly tells whether a line keeps its meaning only in its whole
// document: an alias may name an anchor in another item or redefined in
// one (and the alias budget holds for the document, not each item); a
// document end marker or a directive ends or opens documents YAMLReader
// does not split.
func splitsBadly(line []byte) bool {
	if _, hidden := scanLine(line); hidden {
		return true
	}
	return yamlguard.MayHaveAlias(line) || bytes.HasPrefix(line, []byte("...")) || line[0] == '%'
}

func (d *streamDecoder) run(r io.Reader) error {
	br := bufio.NewReaderSize(r, 1<<20)
	doc := &docScan{}
	first := true
	var line []byte
	for {
		var err error
		line, err = readLine(br, line[:0])
		if err != nil && err != io.EOF {
			return err
		}
		eof := err == io.EOF
		if first {
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
			first = false
		}
		if bytes.HasPrefix(line, []byte("---")) {
			trimmed := bytes.TrimSpace(line[3:])
			if len(trimmed) > 0 && trimmed[0] != '#' {
				return errNotStreamable
			}
			if doc.empty() && !opensDocument(line) {
				return errNotStreamable
			}
			if err := d.endDocument(doc); err != nil {
				return err
			}
			doc = &docScan{}
			if eof {
				return nil
			}
			continue
		}
		if eof {
			// YAMLReader drops the empty line ReadLine reports at EOF.
			if len(line) > 1 {
				if err := d.addLine(doc, line); err != nil {
					return err
				}
			}
			return d.endDocument(doc)
		}
		if err := d.addLine(doc, line); err != nil {
			return err
		}
	}
}

// readLine reads one line as YAMLReader's LineReader does: without its
// "\n" or "\r\n", then with "\n" appended. At EOF it returns what is left
// (possibly just "\n") and io.EOF.
func readLine(br *bufio.Reader, buf []byte) ([]byte, error) {
	for {
		part, isPrefix, err := br.ReadLine()
		buf = append(buf, part...)
		if err != nil {
			return append(buf, '\n'), err
		}
		if !isPrefix {
			return append(buf, '\n'), nil
		}
	}
}

// isTopLevelKey tells whether line starts with a plain mapping key.
func isTopLevelKey(line []byte) bool {
	if len(line) == 0 || line[0] == ' ' || line[0] == '\t' || line[0] == '#' || line[0] == '-' || line[0] == '\n' {
		return false
	}
	c := line[0]
	if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_') {
		return false
	}
	i := bytes.IndexByte(line, ':')
	return i > 0 && (line[i+1] == ' ' || line[i+1] == '\n')
}

func (d *streamDecoder) addLine(doc *docScan, line []byte) error {
	switch doc.state {
	case inHeader, afterItems:
		if bytes.Equal(bytes.TrimRight(line, " \n"), []byte("items:")) {
			if doc.state == afterItems || doc.unsplittable {
				return errNotStreamable // a second items key, or a header that cannot be cut
			}
			doc.state = inItems
			doc.preItems = len(doc.header)
			return nil
		}
		if splitsBadly(line) {
			if doc.state == afterItems {
				return errNotStreamable
			}
			doc.unsplittable = true
		}
		doc.header = append(doc.header, line...)
		return nil
	}
	// inItems
	if yamlguard.MayHaveAlias(line) {
		return errNotStreamable
	}
	brackets, hiddenBreak := scanLine(line)
	if hiddenBreak {
		return errNotStreamable
	}
	switch {
	case line[0] == '-' && (line[1] == ' ' || line[1] == '\n'):
		if err := d.endItem(doc); err != nil {
			return err
		}
		doc.inItem = true
		doc.indent = contentColumn(line)
		if doc.indent > 0 && !isTopLevelKey(line[doc.indent:]) {
			// Only a block mapping parses alone exactly as in the List: a
			// flow node, for one, tolerates trailing text at the top.
			return errNotStreamable
		}
		doc.item = append(doc.item, ' ')
		doc.item = append(doc.item, line[1:]...)
	case len(bytes.TrimLeft(line, " ")) == 1: // blank
		if doc.inItem {
			doc.item = append(doc.item, line...)
		}
	case line[0] == ' ':
		// An item parses alone as it parses in the List only when every
		// line of it is indented at least as far as its content starts;
		// anything else (items indented under "items:", a flow or quoted
		// scalar running back to the left) is left to the whole-file
		// decoder.
		indent := len(line) - len(bytes.TrimLeft(line, " "))
		if !doc.inItem {
			return errNotStreamable
		}
		if doc.indent == 0 {
			doc.indent = indent
			if !isTopLevelKey(line[indent:]) {
				return errNotStreamable
			}
		} else if indent < doc.indent {
			return errNotStreamable
		}
		doc.item = append(doc.item, line...)
	case isTopLevelKey(line):
		if err := d.endItem(doc); err != nil {
			return err
		}
		doc.state = afterItems
		return d.addLine(doc, line)
	default:
		return errNotStreamable
	}
	doc.width = max(doc.width, len(line))
	doc.brackets += brackets
	return nil
}

// endItem sends the current item. An item that parses alone is whole: a
// quoted scalar or flow collection left open would be an error at its end,
// so none runs on into the next item as it could in the List.
func (d *streamDecoder) endItem(doc *docScan) error {
	if !doc.inItem {
		return nil
	}
	if doc.width+doc.brackets >= maxItemNesting {
		return errNotStreamable
	}
	doc.items++
	doc.inItem = false
	doc.width, doc.brackets = 0, 0
	err := d.addItem(doc.item)
	doc.item = doc.item[:0]
	return err
}

// endDocument checks the document's header: a List's items (already sent)
// stand; any other document is decoded whole, in its place.
func (d *streamDecoder) endDocument(doc *docScan) error {
	if err := d.endItem(doc); err != nil {
		return err
	}
	if doc.state == inHeader {
		if err := d.flush(); err != nil {
			return err
		}
		if len(doc.header) > 0 {
			d.send(&chunk{data: doc.header, ends: []int{len(doc.header)}, whole: true})
		}
		return nil
	}
	if doc.items == 0 {
		return errNotStreamable
	}
	if _, err := yamlToJSON(doc.header[:doc.preItems]); err != nil {
		return errNotStreamable
	}
	raw, err := yamlToJSON(doc.header)
	if err != nil {
		return errNotStreamable
	}
	var keys map[string]json.RawMessage
	if json.Unmarshal(raw, &keys) != nil || keys == nil {
		return errNotStreamable
	}
	for key := range keys {
		if isItemsKey(key) {
			return errNotStreamable // the List's items, written again
		}
	}
	if !isListHeader(raw) {
		return errNotStreamable
	}
	return d.flush()
}

// isItemsKey tells whether a key is one encoding/json matches to a List's
// items: it compares names with Unicode case folding, so "Items" and
// "ITEMS" (and "iteMſ") set the same field, the last one written winning.
func isItemsKey(key string) bool {
	return strings.EqualFold(key, "items")
}

// isListHeader tells whether the keys of a List besides its items (raw,
// a JSON object) make it a List to the whole-file decoder.
func isListHeader(raw []byte) bool {
	var head typeHeader
	if json.Unmarshal(raw, &head) != nil || head.Items != nil {
		return false
	}
	return head.Kind == "List" || hasListSuffix(head.Kind)
}

func hasListSuffix(kind string) bool {
	return len(kind) > len("List") && kind[len(kind)-len("List"):] == "List"
}

// streamJSON decodes a JSON snapshot file, a sequence of top-level
// objects, with the items of each List decoded one by one on every core.
// Any other shape returns errNotStreamable.
func streamJSON(r io.Reader, size int64) (*objects.Set, error) {
	return stream(r, size, (*streamDecoder).runJSON)
}

func (d *streamDecoder) runJSON(r io.Reader) error {
	d.json = true
	br := bufio.NewReaderSize(r, 1<<20)
	if bom, err := br.Peek(3); err == nil && bytes.Equal(bom, []byte("\xef\xbb\xbf")) {
		_, _ = br.Discard(3)
	}
	s := &jsonSplitter{br: br}
	for {
		c, err := s.peek()
		if err == io.EOF {
			return nil
		}
		if err != nil || c != '{' {
			return errNotStreamable
		}
		if d.jsonObject(s) != nil {
			// The whole-file decoder names what is wrong, and where.
			return errNotStreamable
		}
	}
}

// jsonObject reads one top-level object: its items go to the workers as
// they come, the other keys make the header.
func (d *streamDecoder) jsonObject(s *jsonSplitter) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	// The header keeps the other members in their order: encoding/json
	// lets the last of two keys that fold alike win, as in the whole file.
	header := []byte{'{'}
	items := -1
	var text []byte
	for member := 0; ; member++ {
		c, err := s.peek()
		if err != nil {
			return unexpectedEOF(err)
		}
		if c == '}' {
			if err := s.expect('}'); err != nil {
				return err
			}
			break
		}
		if member > 0 {
			if err := s.expect(','); err != nil {
				return err
			}
		}
		if text, err = s.value(text[:0]); err != nil {
			return err
		}
		var key string
		if err := json.Unmarshal(text, &key); err != nil {
			return errNotStreamable
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if key != "items" {
			if isItemsKey(key) {
				return errNotStreamable // the items under another spelling
			}
			if len(header) > 1 {
				header = append(header, ',')
			}
			header = append(append(header, text...), ':')
			if text, err = s.value(text[:0]); err != nil {
				return err
			}
			header = append(header, text...)
			continue
		}
		if items >= 0 {
			return errNotStreamable // a second items key
		}
		if items, err = d.jsonItems(s); err != nil {
			return err
		}
	}
	if items <= 0 || !isListHeader(append(header, '}')) {
		return errNotStreamable
	}
	return d.flush()
}

// jsonItems hands every item of an items array to the workers and returns
// how many there were.
func (d *streamDecoder) jsonItems(s *jsonSplitter) (int, error) {
	if err := s.expect('['); err != nil {
		return 0, err
	}
	var item []byte
	for n := 0; ; n++ {
		c, err := s.peek()
		if err != nil {
			return 0, unexpectedEOF(err)
		}
		if c == ']' {
			return n, s.expect(']')
		}
		if n > 0 {
			if err := s.expect(','); err != nil {
				return 0, err
			}
		}
		if item, err = s.value(item[:0]); err != nil {
			return 0, err
		}
		if err := d.addItem(item); err != nil {
			return 0, err
		}
	}
}

// readSnapshotStream decodes a large file as a stream, or returns
// errNotStreamable.
func readSnapshotStream(path string, isJSON bool) (*objects.Set, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, errNotStreamable
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, errNotStreamable
	}
	if isJSON {
		return streamJSON(f, info.Size())
	}
	return streamYAML(f, info.Size())
}
