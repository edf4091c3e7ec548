// Package helmchart checks the Helm chart in magnetar/ without a
// Kubernetes cluster: `helm lint`, `helm template` for several value sets,
// every rendered manifest validated against the Kubernetes API schemas by
// kubeconform, and the rendered configuration files accepted by
// `magnetar config dump`.
//
// The tools are the ones scripts/test installs from their Go modules
// (helm.sh/helm/v3/cmd/helm, github.com/yannh/kubeconform/cmd/kubeconform);
// outside -short a missing tool fails the test. The schemas are made
// offline from the Kubernetes OpenAPI (v2) document that the Go module
// k8s.io/cli-runtime ships (artifacts/openapi/swagger.json): every
// definition that names a group/version/kind becomes one JSON schema file
// with its references inlined, objects closed (additionalProperties:
// false, kubeconform's strict schemas), IntOrString as string or integer
// and Quantity as string or number (how YAML writes them).
//
// The package has no non-test code besides this file.
package helmchart
