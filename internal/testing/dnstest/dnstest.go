// Package dnstest runs a DNS server on loopback that answers A and AAAA
// questions from a table, so that tests can give names the addresses they
// need (a name resolving to 127.0.0.1, a name that answers differently the
// second time) and have Go's own resolver ask for them over the DNS
// protocol, as it asks a cluster's DNS.
package dnstest

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// Server answers from its table; a name it does not hold is NXDOMAIN.
type Server struct {
	conn net.PacketConn

	mu      sync.Mutex
	answers map[string][][]netip.Addr
	asked   map[string]int
}

// Start serves on a loopback UDP port until the test ends. Each name maps
// to the answers it gives, one per question in turn, the last one ever
// after.
func Start(t testing.TB, answers map[string][][]netip.Addr) *Server {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{conn: conn, answers: map[string][][]netip.Addr{}, asked: map[string]int{}}
	for name, a := range answers {
		s.answers[fqdn(name)] = a
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.serve()
	}()
	t.Cleanup(func() {
		conn.Close()
		<-done
	})
	return s
}

// Resolver asks the server, and nothing else, every question.
func (s *Server) Resolver() *net.Resolver {
	addr := s.conn.LocalAddr().String()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", addr)
	}}
}

// Asked is how many A questions the server answered for name.
func (s *Server) Asked(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asked[fqdn(name)]
}

func fqdn(name string) string {
	return strings.ToLower(strings.TrimSuffix(name, ".")) + "."
}

func (s *Server) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := s.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		var p dnsmessage.Parser
		header, err := p.Start(buf[:n])
		if err != nil {
			continue
		}
		q, err := p.Question()
		if err != nil {
			continue
		}
		reply, err := s.answer(header, q)
		if err != nil {
			continue
		}
		_, _ = s.conn.WriteTo(reply, from)
	}
}

func (s *Server) answer(h dnsmessage.Header, q dnsmessage.Question) ([]byte, error) {
	name := strings.ToLower(q.Name.String())
	s.mu.Lock()
	turns, known := s.answers[name]
	var addrs []netip.Addr
	if known && len(turns) > 0 {
		i := s.asked[name]
		if i >= len(turns) {
			i = len(turns) - 1
		}
		addrs = turns[i]
		if q.Type == dnsmessage.TypeA {
			s.asked[name]++
		}
	}
	s.mu.Unlock()

	rcode := dnsmessage.RCodeSuccess
	if !known {
		rcode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RecursionAvailable: true, RCode: rcode})
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if err := b.StartAnswers(); err != nil {
		return nil, err
	}
	rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 0}
	for _, a := range addrs {
		switch {
		case q.Type == dnsmessage.TypeA && a.Is4():
			if err := b.AResource(rh, dnsmessage.AResource{A: a.As4()}); err != nil {
				return nil, err
			}
		case q.Type == dnsmessage.TypeAAAA && a.Is6():
			if err := b.AAAAResource(rh, dnsmessage.AAAAResource{AAAA: a.As16()}); err != nil {
				return nil, err
			}
		}
	}
	return b.Finish()
}
