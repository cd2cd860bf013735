package dashboard

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"text/template"
	"unicode/utf8"

	"github.com/kedge-io/kedge/templates"
)

const (
	// MaxBodyLen is the most characters GitHub accepts in a PR or issue
	// body or a comment.
	MaxBodyLen = 65536
	// BodyBudget is what kedge fills at most, leaving GitHub's limit some
	// room: longer bodies lose table rows (never half a row) and say so.
	BodyBudget = 60000
	// maxTitleLen is GitHub's limit on PR titles.
	maxTitleLen = 256
)

// ErrStateTooLarge means the hidden state of a PR alone would not fit in a
// body: the namespace has too many workloads for one PR.
var ErrStateTooLarge = errors.New("the PR state block does not fit in a GitHub body")

// Template files. Their names are fixed: an override directory replaces
// any of them by holding a file of the same name.
const (
	PartialsFile         = "partials.tmpl"
	PRTitleFile          = "pr-title.tmpl"
	PRBodyFile           = "pr-body.tmpl"
	CommitMessageFile    = "commit-message.tmpl"
	DashboardIssueFile   = "dashboard-issue.tmpl"
	CommentClosedFile    = "comment-" + CommentClosed + ".tmpl"
	CommentEditedFile    = "comment-" + CommentEdited + ".tmpl"
	CommentRolledOutFile = "comment-" + CommentRolledOut + ".tmpl"
	CommentStalledFile   = "comment-" + CommentStalled + ".tmpl"
	PlanFile             = "plan.tmpl"
	commentFilePrefix    = "comment-"
	templateFileSuffix   = ".tmpl"
	builtinOriginPrefix  = "built-in "
)

// CommentKinds are every comment kind, in the order the templates are
// listed.
var CommentKinds = []string{
	CommentClosed, CommentClosedOptedOut, CommentClosedNotSelected, CommentClosedDeleted,
	CommentClosedNotEditable, CommentClosedMixed, CommentDuplicate, CommentSuperseded,
	CommentEdited, CommentRolledOut, CommentStalled,
}

// CommentFile is the template file of a comment kind.
func CommentFile(kind string) string { return commentFilePrefix + kind + templateFileSuffix }

// mainFiles are the templates rendered directly; each is parsed on top of
// its own copy of the partials, so an override's definitions stay in it.
var mainFiles = func() []string {
	files := []string{PRTitleFile, PRBodyFile, CommitMessageFile, DashboardIssueFile}
	for _, kind := range CommentKinds {
		files = append(files, CommentFile(kind))
	}
	return append(files, PlanFile)
}()

// Renderer renders kedge's Markdown from the templates.
type Renderer struct {
	sets map[string]*template.Template
	// origin names where each file came from, for error messages.
	origin map[string]string
}

// NewRenderer loads the built-in templates, replacing each by the file of
// the same name in overrideDir when there is one ("" for none). A template
// that does not parse, or fails on sample data, is an error naming its
// file and line; so is an unknown *.tmpl file in overrideDir (a typo would
// otherwise be ignored silently).
func NewRenderer(overrideDir string) (*Renderer, error) {
	sources, origin, err := loadSources(overrideDir)
	if err != nil {
		return nil, err
	}
	partials, err := loadPartials(sources[PartialsFile], origin[PartialsFile])
	if err != nil {
		return nil, err
	}
	r := &Renderer{sets: map[string]*template.Template{}, origin: origin}
	for _, name := range mainFiles {
		set, err := partials.Clone()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", origin[PartialsFile], err)
		}
		if _, err := set.New(name).Parse(sources[name]); err != nil {
			return nil, fmt.Errorf("%s: %w", origin[name], err)
		}
		r.sets[name] = set
	}
	if err := r.check(); err != nil {
		return nil, err
	}
	return r, nil
}

// loadPartials parses the built-in partials, then an override on top: an
// override written before a partial was added keeps working, and each
// definition it holds replaces the built-in one everywhere.
func loadPartials(source, origin string) (*template.Template, error) {
	builtin, err := fs.ReadFile(templates.Default(), PartialsFile)
	if err != nil {
		return nil, fmt.Errorf("built-in template %s: %w", PartialsFile, err)
	}
	partials, err := template.New(PartialsFile).Funcs(funcs()).Option("missingkey=error").Parse(string(builtin))
	if err != nil {
		return nil, fmt.Errorf("%s%s: %w", builtinOriginPrefix, PartialsFile, err)
	}
	if origin == builtinOriginPrefix+PartialsFile {
		return partials, nil
	}
	if _, err := partials.Parse(source); err != nil {
		return nil, fmt.Errorf("%s: %w", origin, err)
	}
	return partials, nil
}

func loadSources(overrideDir string) (map[string]string, map[string]string, error) {
	sources, origin := map[string]string{}, map[string]string{}
	for _, name := range append([]string{PartialsFile}, mainFiles...) {
		b, err := fs.ReadFile(templates.Default(), name)
		if err != nil {
			return nil, nil, fmt.Errorf("built-in template %s: %w", name, err)
		}
		sources[name] = string(b)
		origin[name] = builtinOriginPrefix + name
	}
	if overrideDir == "" {
		return sources, origin, nil
	}
	entries, err := os.ReadDir(overrideDir)
	if err != nil {
		return nil, nil, fmt.Errorf("templates directory: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), templateFileSuffix) {
			continue
		}
		file := filepath.Join(overrideDir, e.Name())
		if _, known := sources[e.Name()]; !known {
			return nil, nil, fmt.Errorf("%s: unknown template file (known: %s)", file, strings.Join(knownFiles(), ", "))
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, nil, err
		}
		sources[e.Name()] = string(b)
		origin[e.Name()] = file
	}
	return sources, origin, nil
}

func knownFiles() []string {
	names := append([]string{PartialsFile}, mainFiles...)
	sort.Strings(names)
	return names
}

// check renders every template on a full and an empty sample, so a
// reference to a missing field fails at load time, not in the middle of a
// cycle.
func (r *Renderer) check() error {
	for _, s := range samples() {
		if _, err := r.PRTitle(s.pr); err != nil {
			return err
		}
		if _, err := r.PRBody(s.pr); err != nil {
			return err
		}
		if _, err := r.CommitMessage(s.pr); err != nil {
			return err
		}
		if _, err := r.DashboardIssue(s.dashboard); err != nil {
			return err
		}
		for _, kind := range CommentKinds {
			if _, err := r.Comment(kind, s.comment); err != nil {
				return err
			}
		}
		if _, err := r.Plan(s.plan); err != nil {
			return err
		}
	}
	return nil
}

// PRTitle renders pr-title.tmpl as one line of at most 256 characters.
func (r *Renderer) PRTitle(pr NamespacePR) (string, error) {
	out, err := r.exec(PRTitleFile, newPRView(pr, -1))
	if err != nil {
		return "", err
	}
	title := strings.Join(strings.Fields(out), " ")
	if utf8.RuneCountInString(title) > maxTitleLen {
		title = string([]rune(title)[:maxTitleLen-1]) + "…"
	}
	return title, nil
}

// PRBody renders pr-body.tmpl. Bodies over BodyBudget lose workload rows
// from the end (the template says how many and where to find them); the
// hidden state block is always whole and last.
func (r *Renderer) PRBody(pr NamespacePR) (string, error) {
	block := newPRView(pr, 0).StateBlock
	if len(block) > MaxBodyLen-2048 {
		return "", fmt.Errorf("namespace %s: %w (%d bytes)", pr.Namespace, ErrStateTooLarge, len(block))
	}
	budget := BodyBudget
	if len(block) > BodyBudget-4096 {
		budget = MaxBodyLen - 256
	}
	build := func(limit int) any { return newPRView(pr, limit) }
	out, err := r.fit(PRBodyFile, build, len(pr.Workloads), budget, func(s string) string { return withBlock(s, block) })
	if err != nil {
		return "", err
	}
	return hardCut(out, block, budget, pr.DashboardURL), nil
}

// CommitMessage renders commit-message.tmpl; it lists every workload, so
// it has no size limit.
func (r *Renderer) CommitMessage(pr NamespacePR) (string, error) {
	return r.exec(CommitMessageFile, newPRView(pr, -1))
}

// DashboardIssue renders dashboard-issue.tmpl, cutting its lists to fit
// BodyBudget.
func (r *Renderer) DashboardIssue(d ClusterDashboard) (string, error) {
	whole := newDashboardView(d)
	build := func(limit int) any { return whole.cut(limit) }
	// Every listing is cut at the limit: the longest one's length renders
	// everything.
	longest := max(len(whole.Rows.Items), len(whole.UnfixableRows.Items), len(whole.SkippedRows.Items),
		len(whole.RefusedRows.Items), len(whole.StragglerRows.Items), len(whole.HeldMigrations.Items))
	out, err := r.fit(DashboardIssueFile, build, longest, BodyBudget, nil)
	if err != nil {
		return "", err
	}
	return hardCut(out, "", BodyBudget, ""), nil
}

// Comment renders comment-<kind>.tmpl (see the Comment* kinds). CommentData
// is wrapped in a CommentView, with lists cut to fit BodyBudget; any other
// data goes to the template as it is.
func (r *Renderer) Comment(kind string, data any) (string, error) {
	name := CommentFile(kind)
	if _, ok := r.sets[name]; !ok {
		return "", fmt.Errorf("unknown comment kind %q", kind)
	}
	build := func(int) any { return data }
	longest := 0
	var c *CommentData
	switch d := data.(type) {
	case CommentData:
		c = &d
	case *CommentData:
		c = d
	}
	if c != nil {
		build = func(limit int) any { return newCommentView(*c, limit) }
		longest = len(c.Targets) + len(c.Closed) + len(c.Stragglers)
	}
	out, err := r.fit(name, build, longest, BodyBudget, nil)
	if err != nil {
		return "", err
	}
	dashboard := ""
	if c != nil {
		dashboard = c.DashboardURL
	}
	return hardCut(out, "", BodyBudget, dashboard), nil
}

// Plan renders plan.tmpl: everything, as it is printed, not posted.
func (r *Renderer) Plan(p PlanView) (string, error) {
	return r.exec(PlanFile, newPlanDoc(p))
}

func (r *Renderer) exec(name string, data any) (string, error) {
	set, ok := r.sets[name]
	if !ok {
		return "", fmt.Errorf("no template %s", name)
	}
	var b strings.Builder
	if err := set.ExecuteTemplate(&b, name, data); err != nil {
		return "", fmt.Errorf("%s: %w", r.origin[name], err)
	}
	return tidy(b.String()), nil
}

// fit renders with every row when that fits in budget, else with the most
// rows per list that do (found by bisection, as a row's length varies).
// finish, when given, is applied to each rendering before measuring.
func (r *Renderer) fit(name string, build func(limit int) any, longest, budget int, finish func(string) string) (string, error) {
	render := func(limit int) (string, error) {
		out, err := r.exec(name, build(limit))
		if err == nil && finish != nil {
			out = finish(out)
		}
		return out, err
	}
	return largestFitting(render, longest, budget)
}

// largestFitting renders everything when it fits in budget, else with the
// largest row limit that does (the rendering only grows with the limit),
// else with none.
func largestFitting(render func(limit int) (string, error), longest, budget int) (string, error) {
	out, err := render(-1)
	if err != nil || len(out) <= budget {
		return out, err
	}
	best := ""
	lo, hi := 0, longest
	fits := func(limit int) (bool, error) {
		cut, err := render(limit)
		if err != nil || len(cut) > budget {
			hi = min(hi, limit-1)
			return false, err
		}
		best, lo = cut, limit+1
		return true, nil
	}
	// The count that fits is near the budget's share of the whole when
	// rows are of about one length: the bracket is found from there by
	// doubling or halving, so a fleet's thousands of rows are not rendered
	// on the way to a few hundred.
	probe := longest * budget / len(out)
	up, err := fits(probe)
	for err == nil && lo <= hi {
		if up {
			probe = min(hi, 2*probe+1)
		} else {
			probe = max(lo, probe/2)
		}
		var fit bool
		if fit, err = fits(probe); fit != up {
			break
		}
	}
	if err != nil {
		return "", err
	}
	for lo <= hi {
		if _, err := fits((lo + hi) / 2); err != nil {
			return "", err
		}
	}
	if best == "" {
		// Not even without rows: hardCut takes over.
		return render(0)
	}
	return best, nil
}

// withBlock makes sure the state block ends the body, even when an
// override template forgot it.
func withBlock(body, block string) string {
	if strings.Contains(body, block) {
		return body
	}
	return strings.TrimRight(body, "\n") + "\n\n" + block + "\n"
}

// hardCut is the last resort when a body is over budget even without
// rows (an override template or huge free text): it keeps whole lines,
// closes an open code fence, says where the rest is and ends with the
// state block.
func hardCut(body, block string, budget int, dashboardURL string) string {
	if len(body) <= budget {
		return body
	}
	rest := strings.Replace(body, block, "", 1)
	note := "\n\n**This text was cut to fit GitHub's size limit.**"
	if u := safeURL(dashboardURL); u != "" {
		note += " The [cluster dashboard](" + u + ") summarises the rest."
	}
	note += "\n"
	room := budget - len(note) - len(block) - len("```\n") - 2
	if room < 0 {
		room = 0
	}
	if len(rest) > room {
		rest = rest[:room]
		if i := strings.LastIndexByte(rest, '\n'); i >= 0 {
			rest = rest[:i+1]
		} else {
			rest = ""
		}
	}
	if strings.Count("\n"+rest, "\n```")%2 == 1 {
		rest += "```\n"
	}
	out := strings.TrimRight(rest, "\n") + note
	if block != "" {
		out += "\n" + block + "\n"
	}
	return out
}

var blankRun = regexp.MustCompile(`\n(?:[ \t]*\n){2,}`)

// tidy lets templates be laid out readably: it drops leading blank lines,
// collapses runs of blank lines into one and ends the text with one
// newline.
func tidy(s string) string {
	s = blankRun.ReplaceAllString(s, "\n\n")
	s = strings.TrimLeft(s, "\n")
	s = strings.TrimRight(s, " \t\n")
	if s == "" {
		return ""
	}
	return s + "\n"
}
