// Command pfgo stands in for a Go function built with Pulsar's Go
// Functions SDK (github.com/apache/pulsar/pulsar-function-go/pf), which
// the module proxy does not serve. It implements the SDK's side of
// Pulsar's Go runtime contract on its own, the way pf does, so the worker
// is tested against that contract and not against Magnetar's SDK:
//
//   - configuration: Go's flag package, -instance-conf (the JSON object)
//     or -instance-conf-path (a file), decoded into pf's conf.Conf JSON
//     names; input specs from sourceInputSpecs (topic -> ConsumerSpec
//     JSON) plus the deprecated sourceSpecsTopic fields; userConfig and
//     secretsMap as JSON text; tenant/nameSpace/name; subscriptionName
//     (default tenant/namespace/name), subscriptionType (0 Shared, 1
//     Failover); processingGuarantees (0 at-least-once, 1 at-most-once);
//     clientAuthenticationPlugin/Parameters (token).
//   - control: the gRPC service proto.InstanceControl on :port over
//     HTTP/2 without TLS (GetFunctionStatus, GetAndResetMetrics,
//     ResetMetrics, GetMetrics, HealthCheck; InstanceCommunication.proto
//     field numbers), and the self-stop when no HealthCheck arrives for
//     three expectedHealthCheckInterval periods.
//   - metrics: Prometheus text on :metricsPort at / and /metrics with
//     pf's series (pulsar_function_received_total, ..._processed_
//     successfully_total, ..._user_exceptions_total, ..._process_latency_ms,
//     ..._last_invocation, ..._user_metric) labelled tenant, namespace,
//     name, instance_id, cluster, fqfn.
//   - processing: one consumer per input on a shared channel, the
//     function's output sent to sinkSpecsTopic, acknowledgement after the
//     send (at-least-once) or before processing (at-most-once); a
//     function error is a user exception and the message is negatively
//     acknowledged.
//
// The function itself (what a user would write against pf) appends
// userConfig "suffix" to every input and records the input length as the
// user metric "len". userConfig "crash" makes it panic at start with that
// text (a crash loop for the status test).
package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/protobuf/encoding/protowire"
)

// conf has pf's conf.Conf JSON names.
type conf struct {
	PulsarServiceURL               string            `json:"pulsarServiceURL"`
	InstanceID                     int               `json:"instanceID"`
	FuncID                         string            `json:"funcID"`
	Port                           int               `json:"port"`
	ClusterName                    string            `json:"clusterName"`
	KillAfterIdleMs                int               `json:"killAfterIdleMs"`
	Tenant                         string            `json:"tenant"`
	NameSpace                      string            `json:"nameSpace"`
	Name                           string            `json:"name"`
	ProcessingGuarantees           int32             `json:"processingGuarantees"`
	SecretsMap                     string            `json:"secretsMap"`
	ClientAuthenticationPlugin     string            `json:"clientAuthenticationPlugin"`
	ClientAuthenticationParameters string            `json:"clientAuthenticationParameters"`
	AutoACK                        bool              `json:"autoAck"`
	SubscriptionType               int32             `json:"subscriptionType"`
	SubscriptionName               string            `json:"subscriptionName"`
	SourceInputSpecs               map[string]string `json:"sourceInputSpecs"`
	SourceSpecTopic                string            `json:"sourceSpecsTopic"`
	IsRegexPatternSubscription     bool              `json:"isRegexPatternSubscription"`
	SinkSpecTopic                  string            `json:"sinkSpecsTopic"`
	ExpectedHealthCheckInterval    int32             `json:"expectedHealthCheckInterval"`
	UserConfig                     string            `json:"userConfig"`
	MetricsPort                    int               `json:"metricsPort"`
}

type consumerSpec struct {
	IsRegexPattern    bool `json:"isRegexPattern"`
	ReceiverQueueSize *struct {
		Value int32 `json:"value"`
	} `json:"receiverQueueSize"`
}

func loadConf() *conf {
	content := flag.String("instance-conf", "", "the string content of Conf struct")
	path := flag.String("instance-conf-path", "", "config conf.yml filepath")
	flag.Parse()
	raw := []byte(*content)
	if *path != "" {
		b, err := os.ReadFile(*path)
		if err != nil {
			log.Fatalf("conf file: %v", err)
		}
		raw = b
	}
	if len(raw) == 0 {
		panic("config file is nil.")
	}
	c := &conf{}
	if err := json.Unmarshal(raw, c); err != nil {
		log.Fatalf("unmarshal config content error:%s", err)
	}
	return c
}

// stats are pf's counters.
type stats struct {
	mu                                      sync.Mutex
	received, processed, userExc, systemExc int64
	latencySum                              float64
	lastInvocation                          int64
	latestUser                              []string
	userMetricSum, userMetricN              map[string]float64
}

func main() {
	c := loadConf()
	userCfg := map[string]any{}
	_ = json.Unmarshal([]byte(c.UserConfig), &userCfg)
	if msg, ok := userCfg["crash"].(string); ok {
		panic(msg)
	}
	fqfn := c.Tenant + "/" + c.NameSpace + "/" + c.Name
	labels := prometheus.Labels{"tenant": c.Tenant, "namespace": c.Tenant + "/" + c.NameSpace, "name": c.Name,
		"instance_id": strconv.Itoa(c.InstanceID), "cluster": c.ClusterName, "fqfn": fqfn}
	names := []string{"tenant", "namespace", "name", "instance_id", "cluster", "fqfn"}
	reg := prometheus.NewRegistry()
	gauge := func(n string) prometheus.Gauge {
		v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "pulsar_function_" + n}, names)
		reg.MustRegister(v)
		return v.With(labels)
	}
	mReceived, mProcessed, mUserExc := gauge("received_total"), gauge("processed_successfully_total"), gauge("user_exceptions_total")
	mLast := gauge("last_invocation")
	latency := prometheus.NewSummaryVec(prometheus.SummaryOpts{Name: "pulsar_function_process_latency_ms"}, names)
	userMetric := prometheus.NewSummaryVec(prometheus.SummaryOpts{Name: "pulsar_function_user_metric"}, append(names, "metric"))
	reg.MustRegister(latency, userMetric)
	st := &stats{userMetricSum: map[string]float64{}, userMetricN: map[string]float64{}}

	var lastHealth sync.Mutex
	healthAt := time.Now()
	go serveControl(c, st, func() { lastHealth.Lock(); healthAt = time.Now(); lastHealth.Unlock() })
	go func() {
		mux := http.NewServeMux()
		h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
		mux.Handle("/", h)
		mux.Handle("/metrics", h)
		log.Fatal(http.ListenAndServe(":"+strconv.Itoa(c.MetricsPort), mux))
	}()
	if c.ExpectedHealthCheckInterval > 0 {
		iv := time.Duration(c.ExpectedHealthCheckInterval) * time.Second
		go func() {
			for range time.Tick(iv) {
				lastHealth.Lock()
				idle := time.Since(healthAt)
				lastHealth.Unlock()
				if idle > 3*iv {
					log.Print("Haven't received health check from spawner in a while. Stopping instance...")
					os.Exit(1)
				}
			}
		}()
	}

	opts := pulsar.ClientOptions{URL: c.PulsarServiceURL}
	if c.ClientAuthenticationPlugin != "" {
		a, err := pulsar.NewAuthentication(c.ClientAuthenticationPlugin, c.ClientAuthenticationParameters)
		if err != nil {
			log.Fatalf("auth: %v", err)
		}
		opts.Authentication = a
	}
	client, err := pulsar.NewClient(opts)
	if err != nil {
		log.Fatalf("create client error:%v", err)
	}
	defer client.Close()
	var producer pulsar.Producer
	if c.SinkSpecTopic != "" {
		if producer, err = client.CreateProducer(pulsar.ProducerOptions{Topic: c.SinkSpecTopic}); err != nil {
			log.Fatalf("create producer error:%v", err)
		}
	}
	specs := map[string]consumerSpec{}
	if c.SourceSpecTopic != "" {
		specs[c.SourceSpecTopic] = consumerSpec{IsRegexPattern: c.IsRegexPatternSubscription}
	}
	for topic, raw := range c.SourceInputSpecs {
		var s consumerSpec
		if err := json.Unmarshal([]byte(raw), &s); err != nil {
			panic(fmt.Sprintf("Failed to unmarshal consume specs: %v", err))
		}
		specs[topic] = s
	}
	sub := fqfn
	if c.SubscriptionName != "" {
		sub = c.SubscriptionName
	}
	subType := pulsar.Shared
	if c.SubscriptionType == 1 {
		subType = pulsar.Failover
	}
	ch := make(chan pulsar.ConsumerMessage)
	for topic, s := range specs {
		o := pulsar.ConsumerOptions{SubscriptionName: sub, Type: subType, MessageChannel: ch}
		if s.IsRegexPattern {
			o.TopicsPattern = topic
		} else {
			o.Topic = topic
		}
		if s.ReceiverQueueSize != nil {
			o.ReceiverQueueSize = int(s.ReceiverQueueSize.Value)
		}
		cons, err := client.Subscribe(o)
		if err != nil {
			log.Fatalf("create consumer error:%v", err)
		}
		defer cons.Close()
	}
	suffix, _ := userCfg["suffix"].(string)
	atMostOnce := c.ProcessingGuarantees == 1
	for cm := range ch {
		if c.AutoACK && atMostOnce {
			_ = cm.Consumer.Ack(cm.Message)
		}
		t0 := time.Now()
		st.mu.Lock()
		st.received++
		st.lastInvocation = t0.UnixMilli()
		st.mu.Unlock()
		mReceived.Inc()
		mLast.Set(float64(t0.UnixNano()))
		in := cm.Payload()
		var out []byte
		var ferr error
		if string(in) == "fail" {
			ferr = errors.New("user function refused " + string(in))
		} else {
			out = append(in, suffix...)
			userMetric.With(prometheus.Labels{"tenant": labels["tenant"], "namespace": labels["namespace"], "name": labels["name"],
				"instance_id": labels["instance_id"], "cluster": labels["cluster"], "fqfn": labels["fqfn"], "metric": "len"}).Observe(float64(len(in)))
			st.mu.Lock()
			st.userMetricSum["len"] += float64(len(in))
			st.userMetricN["len"]++
			st.mu.Unlock()
		}
		if ferr != nil {
			mUserExc.Inc()
			st.mu.Lock()
			st.userExc++
			st.latestUser = append(st.latestUser, ferr.Error())
			st.mu.Unlock()
			if c.AutoACK && !atMostOnce {
				cm.Consumer.Nack(cm.Message)
			}
			continue
		}
		if producer != nil && out != nil {
			if _, err := producer.Send(context.Background(), &pulsar.ProducerMessage{Payload: out}); err != nil {
				log.Fatalf("send: %v", err)
			}
		}
		if c.AutoACK && !atMostOnce {
			_ = cm.Consumer.Ack(cm.Message)
		}
		ms := float64(time.Since(t0).Microseconds()) / 1000
		latency.With(labels).Observe(ms)
		mProcessed.Inc()
		st.mu.Lock()
		st.processed++
		st.latencySum += ms
		st.mu.Unlock()
	}
}

// serveControl serves proto.InstanceControl over h2c on :port.
func serveControl(c *conf, st *stats, healthCheck func()) {
	mux := http.NewServeMux()
	unary := func(method string, answer func() []byte) {
		mux.HandleFunc("POST /proto.InstanceControl/"+method, func(w http.ResponseWriter, r *http.Request) {
			if r.ProtoMajor != 2 || r.Header.Get("Content-Type") != "application/grpc" {
				http.Error(w, "gRPC over HTTP/2 only", http.StatusUnsupportedMediaType)
				return
			}
			if _, err := io.ReadAll(r.Body); err != nil { // google.protobuf.Empty
				return
			}
			msg := answer()
			frame := binary.BigEndian.AppendUint32([]byte{0}, uint32(len(msg)))
			w.Header().Set("Content-Type", "application/grpc")
			w.Header().Set("Trailer", "Grpc-Status, Grpc-Message")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(append(frame, msg...))
			w.Header().Set("Grpc-Status", "0")
			w.Header().Set("Grpc-Message", "")
		})
	}
	unary("GetFunctionStatus", func() []byte { return st.functionStatus(c.InstanceID) })
	unary("GetMetrics", st.metricsData)
	unary("GetAndResetMetrics", st.metricsData)
	unary("ResetMetrics", func() []byte { return nil })
	unary("HealthCheck", func() []byte {
		healthCheck()
		return protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 1)
	})
	srv := &http.Server{Addr: ":" + strconv.Itoa(c.Port), Handler: mux, Protocols: new(http.Protocols)}
	srv.Protocols.SetUnencryptedHTTP2(true)
	log.Fatal(srv.ListenAndServe())
}

func varint(b []byte, num protowire.Number, v int64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), uint64(v))
}

func double(b []byte, num protowire.Number, v float64) []byte {
	return protowire.AppendFixed64(protowire.AppendTag(b, num, protowire.Fixed64Type), math.Float64bits(v))
}

func str(b []byte, num protowire.Number, s string) []byte {
	return protowire.AppendString(protowire.AppendTag(b, num, protowire.BytesType), s)
}

// functionStatus encodes FunctionStatus.
func (s *stats) functionStatus(id int) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := varint(nil, 1, 1) // running
	b = varint(b, 17, s.received)
	b = varint(b, 5, s.processed)
	b = varint(b, 6, s.userExc)
	for _, e := range s.latestUser {
		ex := varint(str(nil, 1, e), 2, time.Now().UnixMilli())
		b = protowire.AppendBytes(protowire.AppendTag(b, 7, protowire.BytesType), ex)
	}
	b = varint(b, 8, s.systemExc)
	if s.processed > 0 {
		b = double(b, 12, s.latencySum/float64(s.processed))
	}
	b = varint(b, 13, s.lastInvocation)
	return str(b, 14, strconv.Itoa(id))
}

// metricsData encodes MetricsData.
func (s *stats) metricsData() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := varint(nil, 2, s.received)
	b = varint(b, 4, s.processed)
	b = varint(b, 5, s.systemExc)
	b = varint(b, 6, s.userExc)
	b = varint(b, 8, s.lastInvocation)
	for k, sum := range s.userMetricSum {
		entry := double(str(nil, 1, k), 2, sum/s.userMetricN[k])
		b = protowire.AppendBytes(protowire.AppendTag(b, 9, protowire.BytesType), entry)
	}
	return b
}
