package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kedge-io/kedge/internal/assemble"
	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/dashboard"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/edit"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/plan"
)

var planOutputs = []string{"table", "json", "markdown", "patch"}

// commonFlags are the flags every command reading a cluster shares, with
// the configuration key each one sets.
func commonFlags(cmd *cobra.Command, configFile *string) map[string]string {
	cmd.Flags().StringVar(configFile, "config", "", "configuration file (see config/kedge.example.yaml)")
	cmd.Flags().String("snapshot", "", "read this snapshot directory instead of the live cluster")
	cmd.Flags().String("kubeconfig", "", "kubeconfig of the live cluster")
	cmd.Flags().String("cluster", "", "name of the cluster")
	return map[string]string{"snapshot": "source.snapshot", "kubeconfig": "source.kubeconfig", "cluster": "cluster"}
}

func newPlanCommand() *cobra.Command {
	var configFile, output string
	var repoFlags []string
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Print which workloads drift and what kedge would change (writes nothing)",
		Args:  noArgs,
	}
	keys := commonFlags(cmd, &configFile)
	cmd.Flags().StringArrayVar(&repoFlags, "repo", nil, "local checkout of the GitOps repository: PATH, or owner/name[@branch]=PATH, repeated for several")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: "+strings.Join(planOutputs, "|"))
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if !slices.Contains(planOutputs, output) {
			return usageError{fmt.Errorf("--output: %q is not one of %s", output, strings.Join(planOutputs, ", "))}
		}
		if output == "patch" && len(repoFlags) == 0 {
			return usageError{fmt.Errorf("--output patch needs --repo")}
		}
		repo, repos, err := checkoutFlags(repoFlags)
		if err != nil {
			return err
		}
		cfg, err := config.Load(configFile, cmd.Flags(), keys)
		if err != nil {
			return err
		}
		if err := cfg.Validate(config.ModePlan); err != nil {
			return err
		}
		if err := assemble.ConfigureRendering(cfg); err != nil {
			return err
		}
		// Indexing and rendering a large repository take no context: on
		// a signal the command stops waiting for them, and the process
		// exits with them unfinished; plan writes nothing, so nothing is
		// left half done.
		set, err := untilCancelled(cmd.Context(), func() (*objects.Set, error) { return readCluster(cmd.Context(), cfg) })
		if err != nil {
			return err
		}
		opts := assemble.PlanOptions(cfg, repo)
		if len(repos) > 0 {
			charts, err := os.MkdirTemp("", "kedge-charts-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(charts)
			// Offline, the checkouts named are the only repositories
			// kedge may write to.
			opts.Repositories, opts.RepositoriesFrom = repos, "--repo"
			if err := indexCheckouts(cmd.Context(), set, &opts, chartPulls(cmd, cfg, charts)); err != nil {
				return err
			}
		} else if repo != "" {
			// plan leaves nothing behind: the charts it pulls go in a
			// directory removed when it ends.
			charts, err := os.MkdirTemp("", "kedge-charts-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(charts)
			// The index comes first: its HelmReleases name the charts
			// of HelmRepositories to pull.
			opts.Index, err = untilCancelled(cmd.Context(), func() (*index.Index, error) {
				return plan.Open(opts.RepoRoot, opts.Paths, opts.MaxChartBytes)
			})
			if err != nil {
				return fmt.Errorf("index %s: %w", opts.RepoRoot, err)
			}
			opts.Charts = chartPulls(cmd, cfg, charts).Pull(cmd.Context(), set, opts.Index)
		}
		res, err := untilCancelled(cmd.Context(), func() (*plan.Result, error) {
			return plan.Build(set, opts)
		})
		if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		switch output {
		case "json":
			return writeJSON(out, res.Plan)
		case "patch":
			if len(repos) > 0 {
				return writeRepositoriesPatch(out, res)
			}
			_, err := io.WriteString(out, edit.UnifiedDiff(res.Edits.All()))
			return err
		case "markdown":
			renderer, err := dashboard.NewRenderer(cfg.Templates.Dir)
			if err != nil {
				return &config.Error{Key: "templates.dir", Msg: err.Error()}
			}
			text, err := renderer.Plan(dashboard.PlanView{
				Plan: res.Plan, Mesh: &res.Mesh, Now: time.Now(), ProxyVersions: proxyVersions(res), Snapshot: cfg.Source.Snapshot,
			})
			if err != nil {
				return err
			}
			_, err = io.WriteString(out, text)
			return err
		default:
			return writeTable(out, res)
		}
	}
	return cmd
}

// chartPulls pulls a plan's charts into dir in one session, saying on
// standard error which pulls policy refused.
func chartPulls(cmd *cobra.Command, cfg *config.Config, dir string) *assemble.ChartPulls {
	log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	return &assemble.ChartPulls{Puller: assemble.NewChartPuller(cfg, dir), Log: log}
}

// proxyVersions counts each namespace's live pods by proxy version, as
// the plan found them.
func proxyVersions(res *plan.Result) map[string]map[string]int {
	out := make(map[string]map[string]int, len(res.Namespaces))
	for ns, facts := range res.Namespaces {
		if len(facts.ProxyVersions) > 0 {
			out[ns] = facts.ProxyVersions
		}
	}
	return out
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func writeTable(w io.Writer, res *plan.Result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	several := len(res.Repositories) > 1
	if several {
		fmt.Fprintln(tw, "NAMESPACE\tKIND\tNAME\tREASONS\tPODS\tCURRENT\tDESIRED\tREPOSITORY\tMANIFEST")
	} else {
		fmt.Fprintln(tw, "NAMESPACE\tKIND\tNAME\tREASONS\tPODS\tCURRENT\tDESIRED\tMANIFEST")
	}
	for _, wl := range res.Plan.Workloads {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%s\t%s\t",
			wl.Namespace, wl.Kind, wl.Name, joinReasons(wl.Reasons), wl.Pods.Drifted, wl.Pods.Total,
			orDash(strings.Join(wl.Current.Revisions, ",")), orDash(wl.Desired.Revision))
		if several {
			fmt.Fprintf(tw, "%s\t", orDash(wl.Manifest.Repository))
		}
		fmt.Fprintf(tw, "%s\n", oneLine(manifestCell(wl.Manifest)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(res.Plan.Skipped) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SKIPPED\tKIND\tNAME\tREASON")
		for _, s := range res.Plan.Skipped {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Namespace, s.Kind, s.Name, s.Reason)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	// Files the index could not read may hold a drifted workload's
	// manifest: say which, so "not-found" can be told from "unreadable".
	if problems := indexProblems(res); len(problems) > 0 {
		var skipped, deprecated []index.Problem
		for _, p := range problems {
			if p.Kind == index.ProblemDeprecated {
				deprecated = append(deprecated, p)
			} else {
				skipped = append(skipped, p)
			}
		}
		if err := writeProblems(w, "NOT INDEXED\tPROBLEM\tDETAIL", skipped); err != nil {
			return err
		}
		// Indexed all the same: kustomize still builds them.
		if err := writeProblems(w, "DEPRECATED\tPROBLEM\tDETAIL", deprecated); err != nil {
			return err
		}
	}
	if err := writeMigrations(w, res.Plan.Migrations); err != nil {
		return err
	}
	for _, r := range res.Edits.Refused {
		fmt.Fprintf(w, "refused to edit %s: %s\n", r.Path, r.Reason)
	}
	fmt.Fprintf(w, "\n%d drifted workloads, %d skipped, %d files to change\n",
		len(res.Plan.Workloads), len(res.Plan.Skipped), len(res.Edits.All()))
	return nil
}

// indexProblems are the problems of the checkout's index, or of every
// checkout's, their paths prefixed with the repository, when several are
// planned.
func indexProblems(res *plan.Result) []index.Problem {
	if len(res.Repositories) <= 1 {
		if res.Index == nil {
			return nil
		}
		return res.Index.Problems
	}
	var out []index.Problem
	for _, r := range res.Repositories {
		label := plan.Repository{Name: r.Name, Branch: r.Branch}.Label()
		for _, p := range r.Index.Problems {
			p.Path = label + ":" + p.Path
			out = append(out, p)
		}
	}
	return out
}

// writeMigrations lists the namespaces migration policies select: whether
// each moves and, when Istio's ambient migration guide refuses it or the
// move carries policies over, one line per object with its file and step.
func writeMigrations(w io.Writer, migrations []drift.Migration) error {
	if len(migrations) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MIGRATION\tFROM\tTO\tSTATE\tMANIFEST")
	for _, m := range migrations {
		state := "moves"
		if m.Blocked != "" {
			state = string(m.Blocked)
		}
		cell := manifestCell(m.Manifest)
		if m.Manifest.Path != "" && m.Manifest.Edit == "" {
			cell = m.Manifest.Status + " " + m.Manifest.Path
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.Namespace, m.From, m.To, state, oneLine(cell))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, m := range migrations {
		for _, f := range m.Ambient {
			fmt.Fprintf(w, "  %s refused: %s\n", m.Namespace, f)
		}
		for _, f := range m.Carried {
			fmt.Fprintf(w, "  %s carries over: %s\n", m.Namespace, f)
		}
		if m.Blocked != "" && len(m.Ambient) == 0 && m.Detail != "" {
			fmt.Fprintf(w, "  %s: %s\n", m.Namespace, m.Detail)
		}
	}
	return nil
}

func writeProblems(w io.Writer, header string, problems []index.Problem) error {
	if len(problems) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, p := range problems {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Path, p.Kind, firstLine(p.Err))
	}
	return tw.Flush()
}

func manifestCell(m drift.Manifest) string {
	switch {
	case m.Path != "" && m.Edit != "" && m.Fallback != "":
		return m.Status + " " + m.Path + " (" + m.Edit + ", " + m.Fallback + ")"
	case m.Path != "" && m.Edit != "":
		return m.Status + " " + m.Path + " (" + m.Edit + ")"
	case len(m.Candidates) > 0:
		return m.Status + " " + strings.Join(m.Candidates, ",")
	case m.Detail != "":
		return m.Status + " (" + m.Detail + ")"
	}
	return m.Status
}

func joinReasons(rs []drift.Reason) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = string(r)
	}
	return strings.Join(parts, ",")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// firstLine keeps a table row on one line: kustomize errors run to several.
// oneLine keeps a cell on its row: a detail that quotes a renderer's
// error may hold line breaks and tabs, which would end the row, or open
// cells, in the middle of the table.
func oneLine(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' || r == '\t' }), " ")
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
