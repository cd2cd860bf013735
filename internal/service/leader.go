package service

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"

	"github.com/kedge-io/kedge/internal/cluster"
)

// Lease timings when Election leaves them zero: client-go's usual values.
// A clean shutdown releases the Lease at once; after a leader dies without
// one, another replica takes the Lease within MaxFailover.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// Election configures leader election on a Lease. Only the holder runs
// cycles, so only one replica ever writes to Git and GitHub.
type Election struct {
	// Config reaches the API server; the Lease is read and written with it.
	Config *rest.Config
	// Namespace and Name locate the Lease: kedge's own namespace.
	Namespace, Name string
	// Identity tells replicas apart; it must be unique per process.
	Identity string

	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

func (e Election) withDefaults() Election {
	if e.LeaseDuration == 0 {
		e.LeaseDuration = DefaultLeaseDuration
	}
	if e.RenewDeadline == 0 {
		e.RenewDeadline = DefaultRenewDeadline
	}
	if e.RetryPeriod == 0 {
		e.RetryPeriod = DefaultRetryPeriod
	}
	return e
}

// MaxFailover bounds how long after the leader dies, without releasing
// the Lease, another replica takes it. A replica counts the lease duration
// from when it saw the Lease's last renewal, which it reads only when it
// retries; it then takes the Lease at its next retry. client-go stretches
// each wait between retries by up to JitterFactor times the retry period,
// so each of the two waits lasts up to (1+JitterFactor) retry periods. The
// leader renewed at most a retry period before it died, which only makes
// failovers shorter: with the default timings they take 13 to 24 s.
func (e Election) MaxFailover() time.Duration {
	e = e.withDefaults()
	retry := time.Duration(float64(e.RetryPeriod) * (1 + leaderelection.JitterFactor))
	return e.LeaseDuration + 2*retry
}

func (e Election) validate() error {
	switch {
	case e.Config == nil:
		return errors.New("leader election: no API server configuration")
	case e.Namespace == "":
		return errors.New("leader election: no Lease namespace (server.leaseNamespace)")
	case e.Name == "":
		return errors.New("leader election: no Lease name (server.leaseName)")
	case e.Identity == "":
		return errors.New("leader election: no identity")
	}
	return nil
}

// newElector builds a client-go elector whose OnStartedLeading hands the
// leadership context to lead, which the caller runs synchronously: client-go
// starts the callback on its own goroutine, and kedge must know when the
// leader's work has stopped before it campaigns again.
func (e Election) newElector(client kubernetes.Interface, lead chan<- context.Context, stopped func(), newLeader func(string)) (*leaderelection.LeaderElector, error) {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: e.Namespace, Name: e.Name},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: e.Identity},
	}
	return leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          lock,
		Name:          e.Name,
		LeaseDuration: e.LeaseDuration,
		RenewDeadline: e.RenewDeadline,
		RetryPeriod:   e.RetryPeriod,
		// The caller cancels only after the cycle in flight has ended, so
		// releasing then hands over without waiting out the lease.
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				select {
				case lead <- ctx:
				case <-ctx.Done():
				}
			},
			OnStoppedLeading: stopped,
			OnNewLeader:      newLeader,
		},
	})
}

// LeaseRBAC is the deploy/ rule that lets kedge take its Lease.
const LeaseRBAC = "Role kedge-leader-election in deploy/rbac.yaml"

// Permissions are what client-go's elector does with the Lease.
func (e Election) Permissions() []cluster.Permission {
	lease := func(verb, name string) cluster.Permission {
		return cluster.Permission{Verb: verb, Group: "coordination.k8s.io", Resource: "leases", Namespace: e.Namespace, Name: name, GrantedBy: LeaseRBAC}
	}
	return []cluster.Permission{lease("get", e.Name), lease("create", ""), lease("update", e.Name)}
}

func leaseClient(cfg *rest.Config, renewDeadline time.Duration) (kubernetes.Interface, error) {
	c := rest.CopyConfig(cfg)
	if c.UserAgent == "" {
		c.UserAgent = "kedge-leader-election"
	}
	// A renewal stuck on a dead connection must fail before the lease
	// runs out, or two replicas could both think they lead.
	c.Timeout = renewDeadline / 2
	return kubernetes.NewForConfig(c)
}

// serviceAccountNamespaceFile is where Kubernetes mounts the pod's
// namespace.
var serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// LeaseNamespace picks the namespace of the Lease: the configured one, else
// $POD_NAMESPACE (the downward API), else the namespace of the pod's service
// account, else the namespace of the kubeconfig's current context.
func LeaseNamespace(configured, kubeconfigNamespace string) (string, error) {
	if configured != "" {
		return configured, nil
	}
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns, nil
	}
	if b, err := os.ReadFile(serviceAccountNamespaceFile); err == nil {
		if ns := strings.TrimSpace(string(b)); ns != "" {
			return ns, nil
		}
	}
	if kubeconfigNamespace != "" {
		return kubeconfigNamespace, nil
	}
	return "", errors.New("no namespace for the leader Lease: not in a pod (no " + serviceAccountNamespaceFile +
		") and the kubeconfig's current context names no namespace; set server.leaseNamespace to kedge's namespace")
}

// Identity names this process for leader election: the pod name
// ($POD_NAME, else the host name) and a random suffix, so a restarted
// container never mistakes its predecessor's lease for its own.
func Identity() (string, error) {
	name := os.Getenv("POD_NAME")
	if name == "" {
		var err error
		if name, err = os.Hostname(); err != nil {
			return "", fmt.Errorf("leader election identity: %w", err)
		}
	}
	suffix := make([]byte, 4)
	if _, err := rand.Read(suffix); err != nil {
		return "", fmt.Errorf("leader election identity: %w", err)
	}
	return name + "_" + hex.EncodeToString(suffix), nil
}

// LeaseHeldError says another process holds the Lease.
type LeaseHeldError struct {
	Namespace, Name, Holder string
	// Alive is set when the holder was seen renewing the Lease: it is
	// running, and the Lease is not taken over from it.
	Alive bool
}

func (e *LeaseHeldError) Error() string {
	if e.Alive {
		return fmt.Sprintf("the Lease %s/%s is held by %s, which keeps renewing it: another kedge is running against this cluster; "+
			"stop it (or wait for it to release the Lease) first", e.Namespace, e.Name, e.Holder)
	}
	return fmt.Sprintf("the Lease %s/%s is held by %s: another kedge is running against this cluster; "+
		"stop it (or wait for it to release the Lease), or pass --force to take the Lease over if that kedge is gone", e.Namespace, e.Name, e.Holder)
}

// WithLease runs fn while holding the Lease, so that a one-off cycle is
// never a second writer beside a running service, and releases it after.
// When another process holds the Lease, fn does not run and the error is a
// *LeaseHeldError naming the holder.
func WithLease(ctx context.Context, e Election, fn func(context.Context) error) error {
	return withLease(ctx, e, false, fn)
}

// SeizeLease is WithLease for a Lease whose holder may be gone (a kedge
// killed without releasing it): rather than refusing at once, it watches
// the Lease for up to its duration. A holder that renews it meanwhile is
// alive, and fn does not run (*LeaseHeldError with Alive set); one that
// does not has stopped, and the Lease is taken over as client-go's
// election takes an expired Lease, and released after fn. Liveness is
// judged from renewals seen, never from the holder's clock.
func SeizeLease(ctx context.Context, e Election, fn func(context.Context) error) error {
	return withLease(ctx, e, true, fn)
}

func withLease(ctx context.Context, e Election, seize bool, fn func(context.Context) error) error {
	e = e.withDefaults()
	if err := e.validate(); err != nil {
		return err
	}
	client, err := leaseClient(e.Config, e.RenewDeadline)
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	lead := make(chan context.Context)
	other := make(chan string, 1)
	elector, err := e.newElector(client, lead, func() {}, func(holder string) {
		if holder != e.Identity && holder != "" {
			select {
			case other <- holder:
			default:
			}
		}
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	electorCtx, stop := context.WithCancel(ctx)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		elector.Run(electorCtx)
	}()
	// Cancelling releases the Lease if it was taken; wait for that.
	defer func() { stop(); <-ended }()
	var renewed <-chan string
	for {
		select {
		case leading := <-lead:
			return fn(leading)
		case holder := <-other:
			if !seize {
				return &LeaseHeldError{Namespace: e.Namespace, Name: e.Name, Holder: holder}
			}
			if renewed == nil {
				renewed = watchRenewals(electorCtx, client, e)
			}
		case holder := <-renewed:
			return &LeaseHeldError{Namespace: e.Namespace, Name: e.Name, Holder: holder, Alive: true}
		case <-ended:
			return ctx.Err()
		}
	}
}

// watchRenewals reads the Lease every retry period and sends its holder
// once it sees the Lease renewed (its renew time or holder changed), which
// only a running process does.
func watchRenewals(ctx context.Context, client kubernetes.Interface, e Election) <-chan string {
	out := make(chan string, 1)
	go func() {
		var first *coordinationv1.LeaseSpec
		ticker := time.NewTicker(e.RetryPeriod)
		defer ticker.Stop()
		for {
			lease, err := client.CoordinationV1().Leases(e.Namespace).Get(ctx, e.Name, metav1.GetOptions{})
			if err == nil {
				spec := lease.Spec
				if first == nil {
					first = &spec
				} else if holder := ptr.Deref(spec.HolderIdentity, ""); holder != "" && holder != e.Identity &&
					(holder != ptr.Deref(first.HolderIdentity, "") || !spec.RenewTime.Equal(first.RenewTime)) {
					out <- holder
					return
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	}()
	return out
}
