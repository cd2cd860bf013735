package demodata

import (
	"net/netip"
	"time"

	"github.com/kedge-io/kedge/internal/testing/meshtest"
)

func mustTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// nodes are the worker nodes of the demo cluster.
var nodes = []meshtest.Node{
	{Name: "ip-10-40-11-87.eu-west-1.compute.internal", IP: "10.40.11.87", PodCIDR: netip.MustParsePrefix("10.40.12.0/24")},
	{Name: "ip-10-40-45-203.eu-west-1.compute.internal", IP: "10.40.45.203", PodCIDR: netip.MustParsePrefix("10.40.46.0/24")},
	{Name: "ip-10-40-78-14.eu-west-1.compute.internal", IP: "10.40.78.14", PodCIDR: netip.MustParsePrefix("10.40.79.0/24")},
}
