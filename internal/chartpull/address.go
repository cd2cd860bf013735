package chartpull

import (
	"fmt"
	"net/netip"
	"strings"
)

// forbidden are the addresses no chart pull may connect to unless the host
// it connects to is listed in helm.allowedHosts: what is not on the public
// internet is kedge's own pod, node, cluster or cloud (the instance
// metadata service at 169.254.169.254 hands out credentials), and no
// chart repository a repository's writers can point at belongs there.
// Classes follow the IANA special-purpose registries (RFC 6890, RFC 6598
// for CGNAT, RFC 4193 for unique local IPv6).
var forbidden = []struct {
	prefix netip.Prefix
	class  string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "CGNAT"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("255.255.255.255/32"), "broadcast"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fc00::/7"), "private"},
	{netip.MustParsePrefix("fec0::/10"), "private"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

// nat64 is the well-known NAT64 prefix (RFC 6052): behind a NAT64 gateway
// an address in it reaches the IPv4 address in its last four bytes.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// addressClass names the class of a forbidden address, "" for one a pull
// may reach. An IPv4 address written as IPv6 (::ffff:a.b.c.d, or NAT64's)
// is judged as the IPv4 address it reaches.
func addressClass(a netip.Addr) string {
	// A zone-qualified address matches no prefix: judge it without.
	a = a.WithZone("").Unmap()
	if a.Is6() && nat64.Contains(a) {
		b := a.As16()
		a = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	}
	for _, f := range forbidden {
		if f.prefix.Contains(a) {
			return f.class
		}
	}
	return ""
}

// AddressError refuses a connection to an address of a forbidden class.
type AddressError struct {
	Host  string
	Addr  netip.Addr
	Class string
}

func (e *AddressError) Error() string {
	what := e.Addr.String()
	if e.Host != "" && e.Host != what {
		what = e.Host + " (" + what + ")"
	}
	article := "a"
	if strings.ContainsRune("aeiou", rune(e.Class[0])) {
		article = "an"
	}
	return fmt.Sprintf("refused to connect to %s, %s %s address: chart pulls reach loopback, link-local, private, CGNAT, unspecified and multicast addresses only at hosts listed in helm.allowedHosts", what, article, e.Class)
}
