package server

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/broker"
	"github.com/magnetar-mq/magnetar/cluster"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
	"github.com/magnetar-mq/magnetar/pulsarclient"
	"github.com/magnetar-mq/magnetar/txn"
)

// remoteEnds is what this broker's coordinators end transactions
// through. A topic this broker serves is ended in place (participant.go);
// in a broker cluster, a topic whose bundle another broker owns gets
// END_TXN_ON_PARTITION / END_TXN_ON_SUBSCRIPTION over the binary protocol,
// sent to the owner a lookup finds (Pulsar's coordinator does the same
// through its broker client). The coordinator retries a failed end, so a
// bundle moving between the two steps only delays it.
type remoteEnds struct {
	s   *Server
	mu  sync.Mutex
	cl  *pulsarclient.Client // lazily, on the first remote end
	gen uint64               // the auth.BrokerClient generation cl was built with
}

var _ txn.Participant = (*remoteEnds)(nil)

func (p *remoteEnds) EndOnPartition(ctx context.Context, topic string, id txn.ID, a txn.Action) error {
	err := p.s.EndOnPartition(ctx, topic, id, a)
	if !errors.Is(err, cluster.ErrNotOwned) {
		return err
	}
	cl, err := p.client()
	if err != nil {
		return err
	}
	return remoteTxnError(cl.EndTxnOnPartition(ctx, topic, id.Most, id.Least, pb.TxnAction(a)))
}

func (p *remoteEnds) EndOnSubscription(ctx context.Context, topic, subscription string, id txn.ID, a txn.Action) error {
	err := p.s.EndOnSubscription(ctx, topic, subscription, id, a)
	if !errors.Is(err, cluster.ErrNotOwned) {
		return err
	}
	cl, err := p.client()
	if err != nil {
		return err
	}
	return remoteTxnError(cl.EndTxnOnSubscription(ctx, topic, subscription, id.Most, id.Least, pb.TxnAction(a)))
}

// remoteTxnError maps the owner's TransactionConflict answer to
// ErrConflict, as a local end reports it.
func remoteTxnError(err error) error {
	var se *pulsarclient.ServerError
	if errors.As(err, &se) && se.Code == pb.ServerError_TransactionConflict {
		return broker.Reason(ErrConflict, se.Message)
	}
	return err
}

// client returns the broker's client towards the other brokers: it
// connects to this broker's own service URL (lookups redirect to owners)
// with the brokerClient* credentials in force. Those are dynamic
// (auth.BrokerClient): once they change, the next end builds a new
// client with them and the old one is closed.
func (p *remoteEnds) client() (*pulsarclient.Client, error) {
	b := p.s.b
	var holder *auth.BrokerClient
	sc := b.Config().Security
	if sec := b.Security(); sec != nil {
		holder = sec.Client
	}
	cur, gen := holder.Current()
	if holder == nil && sc != nil {
		cur = auth.BrokerClientSettings{Plugin: sc.BrokerClientAuthenticationPlugin,
			Params: sc.BrokerClientAuthenticationParameters, TLSEnabled: sc.BrokerClientTLSEnabled}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cl != nil && p.gen == gen {
		return p.cl, nil
	}
	u := b.URLs()
	plain, secure := u.Service, u.ServiceTLS
	if b.ServiceAddr() == "" {
		plain = secure
	}
	opts := pulsarclient.ClientOptions{URL: plain, OperationTimeout: requestTimeout, ConnectionTimeout: 10 * time.Second}
	if sc != nil {
		if cur.TLSEnabled && secure != "" || !strings.HasPrefix(plain, "pulsar://") {
			opts.URL = secure
			opts.TLSTrustCertsFilePath = sc.BrokerClientTrustCertsFilePath
		}
		ca, err := auth.ParseClientAuth(cur.Plugin, cur.Params)
		if err != nil {
			return nil, err
		}
		switch {
		case ca == nil:
		case ca.Method == auth.MethodTLS:
			opts.Authentication = pulsarclient.NewAuthenticationTLS(ca.CertFile, ca.KeyFile)
		case ca.Method == auth.MethodToken:
			opts.Authentication = pulsarclient.NewAuthenticationTokenFromSupplier(func() (string, error) {
				d, err := ca.Data()
				return string(d), err
			})
		default:
			d, err := ca.Data()
			if err != nil {
				return nil, err
			}
			user, pass, _ := strings.Cut(string(d), ":")
			if opts.Authentication, err = pulsarclient.NewAuthenticationBasic(user, pass); err != nil {
				return nil, err
			}
		}
	}
	cl, err := pulsarclient.NewClient(opts)
	if err != nil {
		return nil, err
	}
	if old := p.cl; old != nil {
		go old.Close() // ends in flight on it finish or fail; the coordinator retries
	}
	p.cl, p.gen = cl, gen
	return cl, nil
}

func (p *remoteEnds) close() {
	p.mu.Lock()
	cl := p.cl
	p.cl = nil
	p.mu.Unlock()
	if cl != nil {
		cl.Close()
	}
}
