package helmchart

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"
)

// openAPIModule ships the Kubernetes OpenAPI document the schemas are
// made from (the k8s.io version helm v3.21 is built with).
const openAPIModule = "k8s.io/cli-runtime@v0.36.2"

const release = "mq"

// tool finds a command scripts/test installs: in PATH or in the Go bin
// directory. Outside -short a missing tool fails the test.
func tool(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{os.Getenv("GOBIN"), goEnv(t, "GOPATH") + "/bin"} {
		if p := filepath.Join(dir, name); dir != "" && isFile(p) {
			return p
		}
	}
	if testing.Short() {
		t.Skipf("%s is not installed (scripts/test installs it); -short skips the chart checks", name)
	}
	t.Fatalf("%s is not installed: scripts/test installs it from its Go module", name)
	return ""
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

func goEnv(t *testing.T, key string) string {
	t.Helper()
	out, err := exec.Command("go", "env", key).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", key, err)
	}
	return strings.TrimSpace(string(out))
}

func run(t *testing.T, env []string, name string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	if name == fixtures.helm {
		// helm's own cache, configuration and data stay in the test's
		// directory (no HOME needed, nothing left in it).
		for _, v := range []string{"HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME"} {
			cmd.Env = append(cmd.Env, v+"="+filepath.Join(fixtures.helmHome, v))
		}
	}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// fixtures are built once for all subtests: the schemas, the magnetar
// binary and the tools.
var fixtures struct {
	once                             sync.Once
	err                              error
	schemas, magnetar, helm, kubecon string
	helmHome                         string
}

func setup(t *testing.T) {
	t.Helper()
	helm, kubecon := tool(t, "helm"), tool(t, "kubeconform")
	fixtures.once.Do(func() {
		dir, err := os.MkdirTemp("", "magnetar-chart-")
		if err != nil {
			fixtures.err = err
			return
		}
		fixtures.helm, fixtures.kubecon, fixtures.helmHome = helm, kubecon, filepath.Join(dir, "helm-home")
		// The OpenAPI document, from the module cache (the module proxy
		// the first time).
		out, err := exec.Command("go", "mod", "download", "-json", openAPIModule).Output()
		if err != nil {
			fixtures.err = fmt.Errorf("go mod download %s: %v", openAPIModule, err)
			return
		}
		var m struct{ Dir string }
		if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
			fixtures.err = fmt.Errorf("go mod download %s: no directory in %s", openAPIModule, out)
			return
		}
		fixtures.schemas = filepath.Join(dir, "schemas")
		if err := os.Mkdir(fixtures.schemas, 0o755); err != nil {
			fixtures.err = err
			return
		}
		n, err := writeSchemas(filepath.Join(m.Dir, "artifacts", "openapi", "swagger.json"), fixtures.schemas)
		if err != nil {
			fixtures.err = err
			return
		}
		if n < 100 {
			fixtures.err = fmt.Errorf("only %d schemas from %s", n, openAPIModule)
			return
		}
		fixtures.magnetar = filepath.Join(dir, "magnetar")
		if b, err := exec.Command("go", "build", "-o", fixtures.magnetar, "../../cmd/magnetar").CombinedOutput(); err != nil {
			fixtures.err = fmt.Errorf("go build magnetar: %v\n%s", err, b)
		}
	})
	if fixtures.err != nil {
		t.Fatal(fixtures.err)
	}
}

// object is one rendered manifest.
type object map[string]any

func (o object) get(path ...any) any {
	var cur any = map[string]any(o)
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := cur.(map[string]any)
			cur = m[k]
		case int:
			l, _ := cur.([]any)
			if k >= len(l) {
				return nil
			}
			cur = l[k]
		}
	}
	return cur
}

func (o object) str(path ...any) string { s, _ := o.get(path...).(string); return s }

// render runs helm lint and helm template on the chart with a values
// file (and --set pairs), validates every manifest with kubeconform and
// returns them by "Kind/name".
func render(t *testing.T, values string, set ...string) map[string]object {
	t.Helper()
	args := []string{"-f", filepath.Join("magnetar", "ci", values)}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	if out, errOut, err := run(t, nil, fixtures.helm, append([]string{"lint", "--strict", "magnetar"}, args...)...); err != nil {
		t.Fatalf("helm lint %s: %v\n%s%s", values, err, out, errOut)
	}
	manifest, errOut, err := run(t, nil, fixtures.helm, append([]string{"template", release, "magnetar", "--namespace", "pulsar"}, args...)...)
	if err != nil {
		t.Fatalf("helm template %s: %v\n%s", values, err, errOut)
	}
	objs := map[string]object{}
	dec := yaml.NewDecoder(strings.NewReader(manifest))
	for {
		var o map[string]any
		if err := dec.Decode(&o); err != nil {
			if err.Error() == "EOF" {
				break
			}
			t.Fatalf("%s: rendered YAML: %v", values, err)
		}
		if o == nil {
			continue
		}
		ob := object(o)
		key := ob.str("kind") + "/" + ob.str("metadata", "name")
		if _, dup := objs[key]; dup {
			t.Errorf("%s: %s rendered twice", values, key)
		}
		objs[key] = ob
	}
	if len(objs) == 0 {
		t.Fatalf("%s: nothing rendered", values)
	}
	out, err := kubeconform(manifest)
	if err != nil {
		t.Fatalf("kubeconform %s: %v\n%s", values, err, out)
	}
	want := fmt.Sprintf("Valid: %d, Invalid: 0, Errors: 0, Skipped: 0", len(objs))
	if !strings.Contains(string(out), want) {
		t.Fatalf("kubeconform %s: want %q in\n%s", values, want, out)
	}
	return objs
}

// kubeconform validates manifests against the strict schemas.
func kubeconform(manifest string) ([]byte, error) {
	cmd := exec.Command(fixtures.kubecon, "-strict", "-summary", "-output", "text",
		"-schema-location", filepath.Join(fixtures.schemas, "{{ .ResourceKind }}{{ .KindSuffix }}.json"), "-")
	cmd.Stdin = strings.NewReader(manifest)
	return cmd.CombinedOutput()
}

// dump runs `magnetar config dump role --config` on a rendered file with
// the pod's environment and returns flag=value lines; a key Magnetar
// ignores fails the test.
func dump(t *testing.T, role, name, content string, env ...string) map[string]string {
	t.Helper()
	f := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := run(t, env, fixtures.magnetar, "config", "dump", role, "--show-secrets", "--config", f)
	if err != nil {
		t.Fatalf("magnetar config dump %s: %v\n%s\n--- %s:\n%s", role, err, errOut, name, content)
	}
	if strings.Contains(errOut, "ignoring") || strings.TrimSpace(errOut) != "" {
		t.Errorf("magnetar config dump %s: %s\n--- %s:\n%s", role, errOut, name, content)
	}
	got := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(k, "#") {
			v, _, _ = strings.Cut(v, "\t#")
			got[k] = v
		}
	}
	return got
}

func expect(t *testing.T, what string, got map[string]string, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s=%q, want %q", what, k, got[k], v)
		}
	}
}

func configMap(t *testing.T, objs map[string]object, name, key string) string {
	t.Helper()
	cm, ok := objs["ConfigMap/"+name]
	if !ok {
		t.Fatalf("no ConfigMap %s", name)
	}
	s := cm.str("data", key)
	if s == "" {
		t.Fatalf("ConfigMap %s has no %s", name, key)
	}
	return s
}

func container(t *testing.T, o object) object {
	t.Helper()
	c, ok := o.get("spec", "template", "spec", "containers", 0).(map[string]any)
	if !ok {
		t.Fatalf("%s has no container", o.str("metadata", "name"))
	}
	return object(c)
}

const zk0 = release + "-zookeeper-0." + release + "-zookeeper.pulsar.svc.cluster.local:2181"

// TestChartDefault: the default values render a full cluster whose
// manifests are valid Kubernetes objects and whose configuration files
// magnetar accepts with the values the chart meant.
func TestChartDefault(t *testing.T) {
	setup(t)
	objs := render(t, "default-values.yaml")
	for _, k := range []string{"StatefulSet/mq-zookeeper", "StatefulSet/mq-bookie", "Deployment/mq-broker", "Deployment/mq-proxy",
		"Deployment/mq-recovery", "Service/mq-proxy", "PodDisruptionBudget/mq-bookie", "PodDisruptionBudget/mq-broker", "PodDisruptionBudget/mq-zookeeper"} {
		if _, ok := objs[k]; !ok {
			t.Errorf("%s not rendered", k)
		}
	}
	if _, ok := objs["Deployment/mq-functions-worker"]; ok {
		t.Error("the functions worker is rendered by default (it runs user code: off unless asked for)")
	}
	// ZooKeeper is Apache ZooKeeper's image, three servers.
	zk := objs["StatefulSet/mq-zookeeper"]
	if img := container(t, zk).str("image"); !strings.HasPrefix(img, "zookeeper:") {
		t.Errorf("ZooKeeper image %q", img)
	}
	// Bookies: separate journal and ledger claims, hard anti-affinity, a
	// budget that keeps the ensemble size (3) up.
	bk := objs["StatefulSet/mq-bookie"]
	var claims []string
	for _, c := range bk.get("spec", "volumeClaimTemplates").([]any) {
		claims = append(claims, object(c.(map[string]any)).str("metadata", "name"))
	}
	if strings.Join(claims, ",") != "journal,ledgers" {
		t.Errorf("bookie claims %v, want journal and ledgers", claims)
	}
	if bk.get("spec", "template", "spec", "affinity", "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution") == nil {
		t.Error("bookies have no required pod anti-affinity")
	}
	if got := objs["PodDisruptionBudget/mq-bookie"].get("spec", "minAvailable"); got != 3 {
		t.Errorf("bookie PDB minAvailable %v, want 3 (the ensemble size)", got)
	}
	// Brokers: ready when Pulsar's health check passes.
	br := container(t, objs["Deployment/mq-broker"])
	if p := br.str("readinessProbe", "httpGet", "path"); p != "/admin/v2/brokers/health" {
		t.Errorf("broker readiness path %q", p)
	}
	if objs["Service/mq-proxy"].str("spec", "type") != "LoadBalancer" {
		t.Error("the proxy Service is not the clients' LoadBalancer")
	}
	for key, o := range objs {
		if k := o.str("kind"); k != "StatefulSet" && k != "Deployment" {
			continue
		}
		if container(t, o).get("resources", "requests", "cpu") == nil {
			t.Errorf("%s: no CPU request", key)
		}
	}
	// The configuration files, with the pods' environment.
	expect(t, "broker.conf", dump(t, "broker", "broker.conf", configMap(t, objs, "mq-broker", "broker.conf"), "PULSAR_PREFIX_advertisedAddress=10.1.2.3"),
		map[string]string{"metadata-url": "zk://" + zk0 + "," + strings.Replace(zk0, "-0.", "-1.", 1) + "," + strings.Replace(zk0, "-0.", "-2.", 1),
			"ensemble": "3", "write-quorum": "2", "ack-quorum": "2", "advertised-host": "10.1.2.3", "cluster-name": "magnetar",
			"listen": ":6650", "http": ":8080", "authenticationEnabled": "", "brokerServicePortTls": ""})
	expect(t, "bookkeeper.conf", dump(t, "bookie", "bookkeeper.conf", configMap(t, objs, "mq-bookie", "bookkeeper.conf"),
		"PULSAR_PREFIX_advertisedAddress=mq-bookie-0.mq-bookie.pulsar.svc.cluster.local"),
		map[string]string{"journal-dir": "/pulsar/data/bookkeeper/journal", "ledger-dirs": "[/pulsar/data/bookkeeper/ledgers]",
			"advertised-address": "mq-bookie-0.mq-bookie.pulsar.svc.cluster.local:3181", "listen": ":3181", "journal-no-sync": "false"})
	got := dump(t, "bookie", "bookkeeper.conf", configMap(t, objs, "mq-bookie", "bookkeeper.conf"))
	if !strings.HasPrefix(got["metadata-url"], "zk://"+zk0+",") {
		t.Errorf("bookie metadata-url %q", got["metadata-url"])
	}
	expect(t, "proxy.conf", dump(t, "proxy", "proxy.conf", configMap(t, objs, "mq-proxy", "proxy.conf")),
		map[string]string{"listen": ":6650", "http": ":8080"})
	mountsResolve(t, objs)
}

// TestChartTLSAuth: TLS and token authentication switched on by values
// take their keys and certificates from Secrets, and the brokers, proxy
// and functions worker read them.
func TestChartTLSAuth(t *testing.T) {
	setup(t)
	objs := render(t, "tls-auth-values.yaml")
	broker := dump(t, "broker", "broker.conf", configMap(t, objs, "mq-broker", "broker.conf"), "PULSAR_PREFIX_advertisedAddress=10.1.2.3")
	expect(t, "broker.conf", broker, map[string]string{
		"authenticationEnabled": "true", "authorizationEnabled": "true", "tokenSecretKey": "file:///pulsar/keys/token/secret.key",
		"superUserRoles": "broker-admin,admin", "proxyRoles": "proxy-admin",
		"brokerServicePortTls": "6651", "webServicePortTls": "8443", "tlsCertificateFilePath": "/pulsar/certs/broker/tls.crt",
		"brokerClientAuthenticationParameters": "file:///pulsar/tokens/broker/token",
		// its bookie client: TLS with the bookies' CA
		"brokerClientTlsEnabled": "true", "brokerClientTrustCertsFilePath": "/pulsar/certs/bookie-ca/ca.crt"})
	// Bookies serve TLS and require AUTH from the brokers' role.
	expect(t, "bookkeeper.conf", dump(t, "bookie", "bookkeeper.conf", configMap(t, objs, "mq-bookie", "bookkeeper.conf"),
		"PULSAR_PREFIX_advertisedAddress=mq-bookie-0.mq-bookie.pulsar.svc.cluster.local"), map[string]string{
		"tlsCertificateFilePath": "/pulsar/certs/bookie/tls.crt", "tlsKeyFilePath": "/pulsar/certs/bookie/tls.key",
		"authenticationEnabled": "true", "tokenSecretKey": "file:///pulsar/keys/token/secret.key", "superUserRoles": "broker-admin",
		"authenticationProviders": "org.apache.pulsar.broker.authentication.AuthenticationProviderToken"})
	// Autorecovery's bookie client: the brokers' keys as flags it has.
	recovery := autorecoveryFlags(t, objs)
	for k, v := range map[string]string{"brokerClientTlsEnabled": "true", "brokerClientTrustCertsFilePath": "/pulsar/certs/bookie-ca/ca.crt",
		"brokerClientAuthenticationParameters": "file:///pulsar/tokens/broker/token"} {
		if recovery[k] != v {
			t.Errorf("autorecovery --%s=%q, want %q", k, recovery[k], v)
		}
	}
	expect(t, "proxy.conf", dump(t, "proxy", "proxy.conf", configMap(t, objs, "mq-proxy", "proxy.conf")), map[string]string{
		"authenticationEnabled": "true", "forward-authorization-credentials": "true", "tls-enabled-with-broker": "true",
		"listen-tls": ":6651", "http-tls": ":8443", "brokerClientAuthenticationParameters": "file:///pulsar/tokens/proxy/token"})
	expect(t, "functions_worker.yml", dump(t, "functions-worker", "functions_worker.yml", configMap(t, objs, "mq-functions-worker", "functions_worker.yml")),
		map[string]string{"authenticationEnabled": "true", "authorizationEnabled": "true", "tokenSecretKey": "file:///pulsar/keys/token/secret.key",
			"broker-service-url": "pulsar+ssl://mq-broker.pulsar.svc.cluster.local:6651", "cluster-name": "magnetar"})

	// Secrets: the token key, the role tokens, the certificates.
	secrets := map[string]bool{}
	for key, o := range objs {
		if k := o.str("kind"); k != "Deployment" && k != "StatefulSet" {
			continue
		}
		vols, _ := o.get("spec", "template", "spec", "volumes").([]any)
		for _, v := range vols {
			if s := object(v.(map[string]any)).str("secret", "secretName"); s != "" {
				secrets[key+" "+s] = true
			}
		}
	}
	for _, want := range []string{
		"Deployment/mq-broker mq-token-symmetric-key", "Deployment/mq-broker mq-token-broker-admin", "Deployment/mq-broker mq-tls-broker",
		"Deployment/mq-proxy mq-token-symmetric-key", "Deployment/mq-proxy mq-token-proxy-admin", "Deployment/mq-proxy mq-tls-proxy",
		"Deployment/mq-functions-worker mq-token-broker-admin",
		"StatefulSet/mq-bookie mq-tls-bookie", "StatefulSet/mq-bookie mq-token-symmetric-key",
		"Deployment/mq-broker mq-tls-bookie", "Deployment/mq-recovery mq-tls-bookie", "Deployment/mq-recovery mq-token-broker-admin",
	} {
		if !secrets[want] {
			t.Errorf("no Secret volume %s (have %v)", want, secrets)
		}
	}
	// The proxy trusts the brokers' CA but never holds their key; brokers
	// and autorecovery likewise hold only the bookies' CA.
	for _, c := range [][2]string{{"Deployment/mq-proxy", "mq-tls-broker"}, {"Deployment/mq-broker", "mq-tls-bookie"}, {"Deployment/mq-recovery", "mq-tls-bookie"}} {
		for _, v := range objs[c[0]].get("spec", "template", "spec", "volumes").([]any) {
			vo := object(v.(map[string]any))
			if vo.str("secret", "secretName") == c[1] && fmt.Sprint(vo.get("secret", "items")) != "[map[key:ca.crt path:ca.crt]]" {
				t.Errorf("%s mounts the Secret %s beyond ca.crt: %v", c[0], c[1], vo.get("secret"))
			}
		}
	}
	mountsResolve(t, objs)
	// With authentication the broker's readiness runs the health check
	// with its own token.
	probe := fmt.Sprint(container(t, objs["Deployment/mq-broker"]).get("readinessProbe", "exec", "command"))
	if !strings.Contains(probe, "brokers healthcheck") || !strings.Contains(probe, "file:///pulsar/tokens/broker/token") {
		t.Errorf("broker readiness with auth: %s", probe)
	}
	if ports := fmt.Sprint(objs["Service/mq-proxy"].get("spec", "ports")); !strings.Contains(ports, "pulsarssl") || !strings.Contains(ports, "https") {
		t.Errorf("proxy Service ports without TLS: %s", ports)
	}
}

// autorecoveryFlags returns the --key=value arguments of the autorecovery
// container, failing the test on a flag `magnetar autorecovery` lacks.
func autorecoveryFlags(t *testing.T, objs map[string]object) map[string]string {
	t.Helper()
	help, errOut, err := run(t, nil, fixtures.magnetar, "autorecovery", "--help")
	if err != nil {
		t.Fatalf("magnetar autorecovery --help: %v\n%s", err, errOut)
	}
	args, _ := container(t, objs["Deployment/mq-recovery"]).get("args").([]any)
	got := map[string]string{}
	for _, a := range args {
		k, v, ok := strings.Cut(fmt.Sprint(a), "=")
		if !ok || !strings.HasPrefix(k, "--") {
			continue
		}
		if !strings.Contains(help, "  "+k+" ") {
			t.Errorf("autorecovery argument %s: magnetar autorecovery has no such flag", a)
		}
		got[strings.TrimPrefix(k, "--")] = v
	}
	return got
}

// mountsResolve fails the test when a container mounts a volume its pod
// does not define (Kubernetes would refuse the pod; the schemas cannot
// tell).
func mountsResolve(t *testing.T, objs map[string]object) {
	t.Helper()
	for key, o := range objs {
		if k := o.str("kind"); k != "Deployment" && k != "StatefulSet" {
			continue
		}
		have := map[string]bool{}
		vols, _ := o.get("spec", "template", "spec", "volumes").([]any)
		claims, _ := o.get("spec", "volumeClaimTemplates").([]any)
		for _, v := range vols {
			have[object(v.(map[string]any)).str("name")] = true
		}
		for _, c := range claims {
			have[object(c.(map[string]any)).str("metadata", "name")] = true
		}
		mounts, _ := container(t, o).get("volumeMounts").([]any)
		for _, m := range mounts {
			if n := object(m.(map[string]any)).str("name"); !have[n] {
				t.Errorf("%s mounts volume %q, which its pod does not define", key, n)
			}
		}
	}
}

// TestChartMinimal: one of each without volumes, budgets or
// anti-affinity renders valid manifests and configs at E=Qw=Qa=1.
func TestChartMinimal(t *testing.T) {
	setup(t)
	objs := render(t, "minimal-values.yaml")
	for key, o := range objs {
		if o.str("kind") == "PodDisruptionBudget" {
			t.Errorf("%s rendered with pdb.usePolicy false", key)
		}
		if o.get("spec", "template", "spec", "affinity") != nil {
			t.Errorf("%s has affinity with anti_affinity false", key)
		}
		if o.get("spec", "volumeClaimTemplates") != nil {
			t.Errorf("%s claims volumes with persistence false", key)
		}
	}
	if _, ok := objs["Deployment/mq-recovery"]; ok {
		t.Error("autorecovery rendered with components.autorecovery false")
	}
	if args := fmt.Sprint(container(t, objs["Deployment/mq-broker"]).get("args")); strings.Contains(args, "--autorecovery=false") {
		t.Errorf("brokers without the autorecovery component run none: %s", args)
	}
	expect(t, "broker.conf", dump(t, "broker", "broker.conf", configMap(t, objs, "mq-broker", "broker.conf")),
		map[string]string{"ensemble": "1", "write-quorum": "1", "ack-quorum": "1", "metadata-url": "zk://" + zk0})
	dump(t, "bookie", "bookkeeper.conf", configMap(t, objs, "mq-bookie", "bookkeeper.conf"))
}

// TestChartRefuses: values that would make a broken or unsafe cluster
// stop helm template with a message naming the value.
func TestChartRefuses(t *testing.T) {
	setup(t)
	for _, c := range []struct {
		set  []string
		want string
	}{
		{[]string{"components.functions=true"}, "functions worker runs user programs"},
		{[]string{"bookkeeper.replicaCount=2"}, "below the ensemble size"},
		{[]string{"bookkeeper.pdb.minAvailable=2"}, "minAvailable 2 is below the ensemble size 3"},
		{[]string{"broker.configData.managedLedgerDefaultWriteQuorum=4"}, "want managedLedgerDefaultEnsembleSize >= WriteQuorum"},
		{[]string{"auth.authorization.enabled=true"}, "needs auth.authentication.enabled"},
	} {
		args := []string{"template", release, "magnetar", "-f", filepath.Join("magnetar", "ci", "default-values.yaml")}
		for _, s := range c.set {
			args = append(args, "--set", s)
		}
		_, errOut, err := run(t, nil, fixtures.helm, args...)
		if err == nil || !regexp.MustCompile(regexp.QuoteMeta(c.want)).MatchString(errOut) {
			t.Errorf("--set %v: err %v, stderr %q; want an error with %q", c.set, err, errOut, c.want)
		}
	}
}

// TestChartValidationCatches: the schemas reject what a template mistake
// would produce (an unknown field, a wrong type), and a change of the
// rendered configuration changes the pods' checksum (they restart).
func TestChartValidationCatches(t *testing.T) {
	setup(t)
	manifest, errOut, err := run(t, nil, fixtures.helm, "template", release, "magnetar", "--namespace", "pulsar")
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, errOut)
	}
	for _, c := range []struct{ from, to, want string }{
		{"podManagementPolicy:", "podManagementPolicyX:", "podManagementPolicyX"},
		{"replicas: 4", "replicas: four", "replicas"},
		{"minAvailable: 3", "minAvailable: [3]", "minAvailable"},
	} {
		if !strings.Contains(manifest, c.from) {
			t.Fatalf("the manifest has no %q", c.from)
		}
		out, err := kubeconform(strings.Replace(manifest, c.from, c.to, 1))
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("%q -> %q: kubeconform err %v:\n%s", c.from, c.to, err, out)
		}
	}
	checksum := func(set ...string) string {
		args := []string{"template", release, "magnetar", "--namespace", "pulsar", "--show-only", "templates/broker.yaml"}
		for _, s := range set {
			args = append(args, "--set", s)
		}
		out, errOut, err := run(t, nil, fixtures.helm, args...)
		if err != nil {
			t.Fatalf("helm template: %v\n%s", err, errOut)
		}
		m := regexp.MustCompile(`checksum/config: (\w+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatal("no checksum/config annotation on the brokers")
		}
		return m[1]
	}
	base := checksum()
	if checksum("clusterName=other") == base || checksum("auth.authentication.enabled=true") == base {
		t.Error("a change of broker.conf keeps the brokers' checksum: they would not restart")
	}
	if checksum("proxy.replicaCount=5") != base {
		t.Error("a change outside broker.conf changed the brokers' checksum")
	}
}
