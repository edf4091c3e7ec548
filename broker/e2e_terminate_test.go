package broker

import (
	"context"
	"errors"
	"github.com/magnetar-mq/magnetar/internal/testenv"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto"
	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// TestE2ETerminateWhileSending terminates topics under producers that
// send all the time, as pulsar-client-go's TestTopicTermination does:
// each producer's first failed send must fail with TopicTerminated or
// ProducerClosed, never a send timeout or another error. Before the
// broker closed producers ahead of the ledger's termination, a SEND_ERROR
// TopicTerminated made the client forget the producer and its pending
// send timed out. pulsar-client-go v0.19 itself can lose a send issued
// while its producer closes (the send then never returns; a SendAsync can
// even panic): such a producer is counted, not failed, and
// TestTerminateClosesProducersFirst checks the broker's side exactly.
//
// Under the race detector it runs in this package's tests built without
// it: the producers the termination closes reconnect, and the detector
// then reports a race inside pulsar-client-go v0.19.0 itself (its
// connection's run loop receiving a request against
// rpcClient.RequestOnCnx sending it, both stacks wholly the client's;
// CI, 6 Dec 2026). The broker's side of termination is checked under the
// detector by TestTerminateClosesProducersFirst, over the raw protocol.
func TestE2ETerminateWhileSending(t *testing.T) {
	if raceEnabled {
		testenv.RunWithoutRace(t, "^TestE2ETerminateWhileSending$")
		return
	}
	tb := startBroker(t, nil)
	cl := tb.client(t)
	const producers = 8
	answered := 0
	for round := 0; round < 10; round++ {
		topic := newTopicName("terminate")
		errs := make(chan error, producers)
		var started sync.WaitGroup
		for i := 0; i < producers; i++ {
			prod := mustProducer(t, cl, pulsar.ProducerOptions{Topic: topic, SendTimeout: 2 * time.Second, DisableBatching: i%2 == 0})
			started.Add(1)
			go func() {
				defer prod.Close()
				for n := 0; ; n++ {
					if n == 10 {
						started.Done()
					}
					if _, err := prod.Send(context.Background(), &pulsar.ProducerMessage{Payload: make([]byte, 1024)}); err != nil {
						if n < 10 {
							started.Done()
						}
						errs <- err
						return
					}
					time.Sleep(time.Millisecond)
				}
			}()
		}
		started.Wait()
		if _, err := terminate(tb.Broker, ctxT(t), topic); err != nil {
			t.Fatal(err)
		}
		deadline := time.After(5 * time.Second) // beyond the 2 s send timeout
	collect:
		for i := 0; i < producers; i++ {
			select {
			case err := <-errs:
				if !errors.Is(err, pulsar.ErrTopicTerminated) && !errors.Is(err, pulsar.ErrProducerClosed) {
					t.Fatalf("round %d: a send on the terminated topic failed with %v", round, err)
				}
				answered++
			case <-deadline:
				break collect
			}
		}
	}
	if answered < 10*producers*9/10 {
		t.Fatalf("only %d of %d producers saw their first send fail", answered, 10*producers)
	}
	t.Logf("%d of %d producers saw TopicTerminated or ProducerClosed; the rest lost a send in the client", answered, 10*producers)
}

// TestTerminateClosesProducersFirst: a producer with sends in flight when
// its topic is terminated gets CLOSE_PRODUCER, and never a SEND_ERROR
// TopicTerminated (which pulsar-client-go takes as "forget this
// producer"): before the close only receipts, after it receipts of adds
// that were already written, or nothing; a SEND on the closed producer
// closes the connection, as in Pulsar.
func TestTerminateClosesProducersFirst(t *testing.T) {
	tb := startBroker(t, nil)
	for round := 0; round < 20; round++ {
		topic := newTopicName("terminate-raw")
		r := dialRaw(t, tb, true)
		pid := r.producer(topic)
		go func() {
			for seq := uint64(0); ; seq++ {
				if _, err := r.nc.Write(pulsarproto.AppendSend(nil, &pulsarproto.SendHeader{ProducerID: pid, SequenceID: seq}, testEntry(seq, "m"))); err != nil {
					return
				}
			}
		}()
		var receipts int
		terminated := false
		closed := false
		for {
			_ = r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			f, err := r.fr.Next()
			if err != nil {
				break // the broker closed the connection (a SEND on the closed producer)
			}
			switch f.Type {
			case pb.BaseCommand_SEND_RECEIPT:
				receipts++
				if receipts == 50 && !terminated {
					terminated = true
					go func() {
						if _, err := terminate(tb.Broker, context.Background(), topic); err != nil {
							t.Error(err)
						}
					}()
				}
			case pb.BaseCommand_CLOSE_PRODUCER:
				closed = true
			case pb.BaseCommand_SEND_ERROR:
				t.Fatalf("round %d: SEND_ERROR %v (closed before: %v)", round, f.Cmd.SendError, closed)
			}
		}
		if !terminated || !closed {
			t.Fatalf("round %d: terminated %v, CLOSE_PRODUCER seen %v after %d receipts", round, terminated, closed, receipts)
		}
	}
}
