package functions

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// Pulsar's Go runtime contract (docs/functions.md has the table). A Go
// function built with Pulsar's Go Functions SDK
// (github.com/apache/pulsar/pulsar-function-go/pf) is started as
//
//	EXECUTABLE -instance-conf-path /dev/fd/4
//
// and reads on that pipe (confFD) a JSON object, Pulsar's
// GoInstanceConfig (Pulsar's worker passes the same object as
// -instance-conf on the command line, where every local user could read
// the credentials in it; the SDK reads either): service URL,
// instance id, function details (tenant, nameSpace, name, input specs,
// sink topic, subscription, guarantees, userConfig and secretsMap as JSON
// text, resources, retry details, also the whole FunctionDetails as
// protobuf JSON in functionDetails), the client authentication, and two
// ports the instance listens on: port for the gRPC service
// proto.InstanceControl (GetFunctionStatus, GetAndResetMetrics,
// ResetMetrics, GetMetrics, HealthCheck) and metricsPort for Prometheus
// metrics. The worker calls HealthCheck every
// expectedHealthCheckInterval seconds (an instance that hears none for
// three intervals stops itself) and reads GetFunctionStatus and
// GetMetrics every second for status and stats. gRPC is spoken directly
// over HTTP/2 without TLS (h2c): unary calls, a 5-byte length prefix, the
// status in the grpc-status trailer; the messages are encoded with
// protowire from Pulsar's field numbers (InstanceCommunication.proto).

// HealthCheckInterval is expectedHealthCheckInterval (seconds) given to
// Pulsar-SDK instances, and how often the worker calls their HealthCheck.
const HealthCheckInterval = 30

// pfPorts are the instance's control (gRPC) and metrics ports.
type pfPorts struct{ control, metrics int }

// freePort asks the kernel for an unused TCP port on the loopback.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Pulsar's enum numbers (Function.proto).
var (
	pfGuarantee = map[string]int{AtLeastOnce: 0, AtMostOnce: 1, EffectivelyOnce: 2, Manual: 3}
	pfSubType   = map[string]int{"Shared": 0, "Failover": 1, "Key_Shared": 2}
)

// goInstanceConfig is Pulsar's GoInstanceConfig under its JSON names.
type goInstanceConfig struct {
	PulsarServiceURL            string            `json:"pulsarServiceURL"`
	StateStorageServiceURL      string            `json:"stateStorageServiceUrl,omitempty"`
	PulsarWebServiceURL         string            `json:"pulsarWebServiceUrl,omitempty"`
	InstanceID                  int               `json:"instanceID"`
	FuncID                      string            `json:"funcID"`
	FuncVersion                 string            `json:"funcVersion"`
	MaxBufTuples                int               `json:"maxBufTuples"`
	Port                        int               `json:"port"`
	ClusterName                 string            `json:"clusterName"`
	KillAfterIdleMs             int               `json:"killAfterIdleMs"`
	ExpectedHealthCheckInterval int               `json:"expectedHealthCheckInterval"`
	Tenant                      string            `json:"tenant"`
	NameSpace                   string            `json:"nameSpace"`
	Name                        string            `json:"name"`
	ClassName                   string            `json:"className"`
	LogTopic                    string            `json:"logTopic"`
	ProcessingGuarantees        int               `json:"processingGuarantees"`
	SecretsMap                  string            `json:"secretsMap"`
	UserConfig                  string            `json:"userConfig"`
	Runtime                     int               `json:"runtime"`
	AutoAck                     bool              `json:"autoAck"`
	Parallelism                 int               `json:"parallelism"`
	SubscriptionType            int               `json:"subscriptionType"`
	TimeoutMs                   int64             `json:"timeoutMs"`
	SubscriptionName            string            `json:"subscriptionName"`
	CleanupSubscription         bool              `json:"cleanupSubscription"`
	SubscriptionPosition        int               `json:"subscriptionPosition"`
	SourceSpecsTopic            string            `json:"sourceSpecsTopic"`
	SourceSchemaType            string            `json:"sourceSchemaType"`
	IsRegexPatternSubscription  bool              `json:"isRegexPatternSubscription"`
	ReceiverQueueSize           int               `json:"receiverQueueSize"`
	SourceInputSpecs            map[string]string `json:"sourceInputSpecs"`
	SinkSpecsTopic              string            `json:"sinkSpecsTopic"`
	SinkSchemaType              string            `json:"sinkSchemaType"`
	CPU                         float64           `json:"cpu"`
	RAM                         int64             `json:"ram"`
	Disk                        int64             `json:"disk"`
	MaxMessageRetries           int               `json:"maxMessageRetries"`
	DeadLetterTopic             string            `json:"deadLetterTopic"`
	MetricsPort                 int               `json:"metricsPort"`
	FunctionDetails             string            `json:"functionDetails"`
	// The function's credentials (instanceauth.go) and the trust store.
	ClientAuthenticationPlugin     string `json:"clientAuthenticationPlugin"`
	ClientAuthenticationParameters string `json:"clientAuthenticationParameters"`
	TLSTrustCertsFilePath          string `json:"tlsTrustCertsFilePath"`
	TLSAllowInsecureConnection     bool   `json:"tlsAllowInsecureConnection"`
	TLSHostnameVerificationEnable  bool   `json:"tlsHostnameVerificationEnable"`
}

// instanceConf builds the GoInstanceConfig JSON for instance id of spec
// with credentials cred.
func (w *Worker) instanceConf(spec *Spec, id int, ports pfPorts, cred instanceCredentials) ([]byte, error) {
	userCfg, _ := json.Marshal(nonNilMap(spec.UserConfig))
	secrets, _ := json.Marshal(nonNilMap(spec.Secrets))
	subPos := 0
	if spec.SubscriptionPosition == "Earliest" {
		subPos = 1
	}
	c := goInstanceConfig{
		PulsarServiceURL: w.serviceURL, InstanceID: id, FuncID: spec.FQFN(), FuncVersion: strconv.FormatInt(0, 10),
		Port: ports.control, MetricsPort: ports.metrics, ClusterName: w.opts.Cluster,
		ExpectedHealthCheckInterval: HealthCheckInterval,
		Tenant:                      spec.Tenant, NameSpace: spec.Namespace, Name: spec.Name, LogTopic: spec.LogTopic,
		ProcessingGuarantees: pfGuarantee[spec.ProcessingGuarantees], SecretsMap: string(secrets), UserConfig: string(userCfg),
		Runtime: 3, AutoAck: spec.AutoAck, Parallelism: spec.Parallelism, SubscriptionType: pfSubType[spec.SubscriptionType],
		TimeoutMs: spec.TimeoutMs, SubscriptionName: spec.SubName, SubscriptionPosition: subPos,
		SourceInputSpecs: map[string]string{}, SinkSpecsTopic: spec.Output,
		CPU: spec.Resources.CPU, RAM: spec.Resources.RAM, Disk: spec.Resources.Disk,
		MaxMessageRetries: spec.MaxMessageRetries, DeadLetterTopic: spec.DeadLetterTopic,
		ClientAuthenticationPlugin: cred.Plugin, ClientAuthenticationParameters: cred.Params,
		TLSTrustCertsFilePath: cred.TrustCertsFile, TLSHostnameVerificationEnable: true,
	}
	inputs := map[string]map[string]any{}
	add := func(topic string, regex bool) {
		cs := map[string]any{}
		if regex {
			cs["isRegexPattern"] = true
		}
		b, _ := json.Marshal(cs)
		c.SourceInputSpecs[topic] = string(b)
		inputs[topic] = cs
		// Older SDKs read one topic from the deprecated fields, as
		// Pulsar's worker fills them (the last input).
		c.SourceSpecsTopic, c.IsRegexPatternSubscription = topic, regex
	}
	for _, t := range spec.Inputs {
		add(t, false)
	}
	if spec.TopicsPattern != "" {
		add(spec.TopicsPattern, true)
	}
	guarantee := spec.ProcessingGuarantees
	subTypes := map[string]string{"Shared": "SHARED", "Failover": "FAILOVER", "Key_Shared": "KEY_SHARED"}
	details := map[string]any{
		"tenant": spec.Tenant, "namespace": spec.Namespace, "name": spec.Name, "logTopic": spec.LogTopic,
		"processingGuarantees": guarantee, "userConfig": string(userCfg), "secretsMap": string(secrets),
		"runtime": "GO", "autoAck": spec.AutoAck, "parallelism": spec.Parallelism, "componentType": "FUNCTION",
		"source": map[string]any{"subscriptionType": subTypes[spec.SubscriptionType], "inputSpecs": inputs,
			"timeoutMs": strconv.FormatInt(spec.TimeoutMs, 10), "subscriptionName": spec.SubName,
			"subscriptionPosition": map[int]string{0: "LATEST", 1: "EARLIEST"}[subPos]},
		"sink":         map[string]any{"topic": spec.Output},
		"resources":    map[string]any{"cpu": spec.Resources.CPU, "ram": strconv.FormatInt(spec.Resources.RAM, 10), "disk": strconv.FormatInt(spec.Resources.Disk, 10)},
		"retryDetails": map[string]any{"maxMessageRetries": spec.MaxMessageRetries, "deadLetterTopic": spec.DeadLetterTopic},
	}
	db, err := json.Marshal(details)
	if err != nil {
		return nil, err
	}
	c.FunctionDetails = string(db)
	return instanceConfJSON(c)
}

func nonNilMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// pulsarGoLaunch adds the Pulsar Go runtime contract to l.
func (w *Worker) pulsarGoLaunch(in *instance, l launch) (launch, error) {
	var ports pfPorts
	var err error
	if ports.control, err = freePort(); err != nil {
		return l, err
	}
	if ports.metrics, err = freePort(); err != nil {
		return l, err
	}
	conf, err := w.instanceConf(in.rec.Spec, in.key.id, ports, w.credentialsOf(in.rec))
	if err != nil {
		return l, err
	}
	l.args = append(l.args, "-instance-conf-path", "/dev/fd/"+strconv.Itoa(ConfFD))
	l.conf = conf
	l.pf = &ports
	return l, nil
}

// controlClient calls an instance's proto.InstanceControl service.
type controlClient struct {
	base string
	hc   *http.Client
}

func newControlClient(port int) *controlClient {
	tr := &http.Transport{Protocols: new(http.Protocols), DisableCompression: true}
	tr.Protocols.SetUnencryptedHTTP2(true)
	return &controlClient{base: "http://127.0.0.1:" + strconv.Itoa(port) + "/proto.InstanceControl/",
		hc: &http.Client{Transport: tr, Timeout: 5 * time.Second}}
}

func (c *controlClient) close() { c.hc.CloseIdleConnections() }

// errNoControl: nothing answers on the control port (an instance that
// does not serve Pulsar's contract, or not yet).
var errNoControl = errors.New("functions: instance control port does not answer")

// call makes one unary gRPC call with an empty request and returns the
// response message.
func (c *controlClient) call(ctx context.Context, method string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+method, bytes.NewReader([]byte{0, 0, 0, 0, 0}))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("Te", "trailers")
	resp, err := c.hc.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) {
			return nil, errNoControl
		}
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, err
	}
	st := resp.Trailer.Get("Grpc-Status")
	if st == "" {
		st = resp.Header.Get("Grpc-Status")
	}
	if resp.StatusCode != http.StatusOK || st != "0" {
		return nil, fmt.Errorf("functions: %s: HTTP %d grpc-status %q %s", method, resp.StatusCode, st, resp.Trailer.Get("Grpc-Message"))
	}
	if len(body) < 5 || body[0] != 0 {
		return nil, fmt.Errorf("functions: %s: bad gRPC frame (%d bytes)", method, len(body))
	}
	n := binary.BigEndian.Uint32(body[1:5])
	if int(n) != len(body)-5 {
		return nil, fmt.Errorf("functions: %s: frame length %d, have %d", method, n, len(body)-5)
	}
	return body[5:], nil
}

// pfStatus is the part of Pulsar's FunctionStatus and MetricsData the
// worker keeps.
type pfStatus struct {
	running                                 bool
	failure                                 string
	received, processed, userExc, systemExc int64
	avgLatency                              float64
	lastInvocation                          int64
	latestUser, latestSystem                []ExceptionInfo
	userMetrics                             map[string]float64
}

// decodeFunctionStatus reads FunctionStatus (InstanceCommunication.proto
// field numbers).
func decodeFunctionStatus(b []byte, s *pfStatus) error {
	return eachField(b, func(num protowire.Number, typ protowire.Type, v uint64, raw []byte) error {
		switch num {
		case 1:
			s.running = v != 0
		case 2:
			s.failure = string(raw)
		case 17:
			s.received = int64(v)
		case 5:
			s.processed = int64(v)
		case 6:
			s.userExc = int64(v)
		case 8:
			s.systemExc = int64(v)
		case 7, 9:
			var e ExceptionInfo
			if err := eachField(raw, func(n protowire.Number, _ protowire.Type, v uint64, r []byte) error {
				switch n {
				case 1:
					e.ExceptionString = string(r)
				case 2:
					e.TimestampMs = int64(v)
				}
				return nil
			}); err != nil {
				return err
			}
			if num == 7 {
				s.latestUser = append(s.latestUser, e)
			} else {
				s.latestSystem = append(s.latestSystem, e)
			}
		case 12:
			s.avgLatency = math.Float64frombits(v)
		case 13:
			s.lastInvocation = int64(v)
		}
		return nil
	})
}

// decodeMetricsData reads MetricsData's user metrics (field 9, a map of
// string to double).
func decodeMetricsData(b []byte, s *pfStatus) error {
	return eachField(b, func(num protowire.Number, _ protowire.Type, _ uint64, raw []byte) error {
		if num != 9 {
			return nil
		}
		var k string
		var val float64
		if err := eachField(raw, func(n protowire.Number, _ protowire.Type, v uint64, r []byte) error {
			switch n {
			case 1:
				k = string(r)
			case 2:
				val = math.Float64frombits(v)
			}
			return nil
		}); err != nil {
			return err
		}
		if s.userMetrics == nil {
			s.userMetrics = map[string]float64{}
		}
		s.userMetrics[k] = val
		return nil
	})
}

// eachField walks a protobuf message: varint and fixed values in v,
// length-delimited ones in raw.
func eachField(b []byte, fn func(protowire.Number, protowire.Type, uint64, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		var v uint64
		var raw []byte
		switch typ {
		case protowire.VarintType:
			v, n = protowire.ConsumeVarint(b)
		case protowire.Fixed64Type:
			v, n = protowire.ConsumeFixed64(b)
		case protowire.Fixed32Type:
			var v32 uint32
			v32, n = protowire.ConsumeFixed32(b)
			v = uint64(v32)
		case protowire.BytesType:
			raw, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if err := fn(num, typ, v, raw); err != nil {
			return err
		}
	}
	return nil
}

// pollPulsarInstance reads a Pulsar-SDK instance's status and metrics
// every second into in.cur and calls HealthCheck every
// HealthCheckInterval seconds, until ctx ends (the process exited). It
// stays quiet while the control port does not answer: programs built
// with functions/sdk do not serve it and report on the stats pipe.
func (w *Worker) pollPulsarInstance(ctx context.Context, in *instance, ports pfPorts) {
	cc := newControlClient(ports.control)
	defer cc.close()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	lastHealth := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if time.Since(lastHealth) >= HealthCheckInterval*time.Second/2 {
			if _, err := cc.call(ctx, "HealthCheck"); err == nil {
				lastHealth = time.Now()
			}
		}
		b, err := cc.call(ctx, "GetFunctionStatus")
		if err != nil {
			continue
		}
		var s pfStatus
		if decodeFunctionStatus(b, &s) != nil {
			continue
		}
		if mb, err := cc.call(ctx, "GetMetrics"); err == nil {
			_ = decodeMetricsData(mb, &s)
		}
		cur := InstanceStats{Received: s.received, Processed: s.processed, UserExceptions: s.userExc,
			SystemExceptions: s.systemExc, LatencySumMs: s.avgLatency * float64(s.processed), LatencyCount: s.processed,
			LastInvocation: s.lastInvocation, LatestUserException: s.latestUser, LatestSystemExceptio: s.latestSystem,
			UserMetrics: s.userMetrics}
		in.mu.Lock()
		in.cur = cur
		if s.failure != "" {
			in.lastErr = strings.TrimSpace(s.failure)
		}
		in.mu.Unlock()
	}
}
