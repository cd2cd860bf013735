package dashboard

import (
	"fmt"
	"testing"
	"time"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/prstate"
)

// BenchmarkDashboardIssue renders the dashboard of a fleet far over
// GitHub's size limit: 2,500 namespaces with a PR each, four drifted
// workloads apiece, as the 100k-pod fleet has.
func BenchmarkDashboardIssue(b *testing.B) {
	r, err := NewRenderer("")
	if err != nil {
		b.Fatal(err)
	}
	d := ClusterDashboard{Cluster: "prod-eu-1", Mesh: mesh(), RepoWebURL: repo, BaseBranch: "main", LastCycle: now, LastCycleDuration: time.Minute}
	for i := range 2500 {
		ns := fmt.Sprintf("team-%04d", i)
		row := NamespaceStatus{Namespace: ns, State: prstate.PROpen, PRNumber: 100 + i, PRURL: pullURL(100 + i)}
		for _, name := range []string{"api", "web", "worker", "cache"} {
			row.Workloads = append(row.Workloads, workload(ns, "Deployment", name, []drift.Reason{drift.ReasonRevision}, 2, 3,
				[]string{"1-23-2"}, []string{img1232}, "1-24-0", img1240, found("tenants/"+ns+"/"+name+".yaml", drift.EditInPlace), ago(time.Hour)))
		}
		d.Namespaces = append(d.Namespaces, row)
	}
	var out string
	for b.Loop() {
		if out, err = r.DashboardIssue(d); err != nil {
			b.Fatal(err)
		}
	}
	if len(out) > BodyBudget {
		b.Fatalf("the dashboard is %d bytes, over the %d budget", len(out), BodyBudget)
	}
}
