package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/magnetar-mq/magnetar/metadata"
)

// LeaderInfo is the value of /loadbalance/leader (Pulsar's LeaderBroker).
type LeaderInfo struct {
	BrokerID   string `json:"brokerId"`
	ServiceURL string `json:"serviceUrl"` // the leader's web URL
}

// Leader reads the current leader; ErrNoLeader if none.
func (s *Service) Leader(ctx context.Context) (LeaderInfo, error) {
	data, _, err := s.st.Get(ctx, leaderPath)
	if errors.Is(err, metadata.ErrNotFound) {
		return LeaderInfo{}, ErrNoLeader
	}
	if err != nil {
		return LeaderInfo{}, err
	}
	var li LeaderInfo
	err = json.Unmarshal(data, &li)
	return li, err
}

// IsLeader reports whether this broker leads (as of its last election
// check, and within its session lease).
func (s *Service) IsLeader() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.leader && s.leaseValidFor(s.leaseSession.Load())
}

func (s *Service) leaderValue() []byte {
	v, _ := json.Marshal(LeaderInfo{BrokerID: s.o.BrokerID, ServiceURL: s.o.WebURL})
	return v
}

// elect runs one round of leader election: take /loadbalance/leader if it
// is free, else follow whoever holds it. A leader node left by an earlier
// session of this broker (same value, not ours) goes away with that
// session.
func (s *Service) elect(ctx context.Context) {
	s.mu.Lock()
	closed := s.mu.closed
	s.mu.Unlock()
	if closed {
		return
	}
	val := s.leaderValue()
	data, _, err := s.st.Get(ctx, leaderPath)
	if errors.Is(err, metadata.ErrNotFound) {
		if s.sess != nil {
			err = s.sess.CreateEphemeral(ctx, leaderPath, val)
		} else if e, ok := s.st.(metadata.Ephemeraler); ok {
			err = e.PutEphemeral(ctx, leaderPath, val)
		} else {
			_, err = s.st.Put(ctx, leaderPath, val, metadata.NotExists)
		}
		if err == nil {
			s.log.Info("elected leader")
			s.setLeader(true)
			return
		}
		data, _, err = s.st.Get(ctx, leaderPath)
	}
	if err != nil {
		return // keep the last state; retried on the next tick
	}
	// Our value: ours if the session that created it is ours. A node of an
	// earlier session of the same broker id goes with that session; until
	// then we are not leading.
	s.setLeader(bytes.Equal(data, val) && s.leaderNodeOurs(ctx))
}

// leaderNodeOurs reports whether the leader node was created by our
// current session (we remember taking it).
func (s *Service) leaderNodeOurs(ctx context.Context) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.leader && s.mu.leaderSession == s.leaseSession.Load()
}

func (s *Service) setLeader(v bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v && !s.mu.leader {
		s.mu.leaderSession = s.leaseSession.Load()
	}
	s.mu.leader = v
}

// resign gives up leadership (graceful shutdown).
func (s *Service) resign(ctx context.Context) {
	s.mu.Lock()
	was := s.mu.leader
	s.mu.leader = false
	s.mu.Unlock()
	if !was {
		return
	}
	data, v, err := s.st.Get(ctx, leaderPath)
	if err == nil && bytes.Equal(data, s.leaderValue()) {
		_ = s.st.Delete(ctx, leaderPath, v)
	}
}
