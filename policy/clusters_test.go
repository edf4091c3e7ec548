package policy

import "testing"

func TestClusterDataValidate(t *testing.T) {
	ok := []ClusterData{
		{},
		{ServiceURL: "http://h:8080", ServiceURLTLS: "https://h:8443", BrokerServiceURL: "pulsar://h:6650", BrokerServiceURLTLS: "pulsar+ssl://h:6651"},
		{BrokerServiceURL: "pulsar://h1:6650,h2:6650"},
		{ProxyServiceURL: "pulsar+ssl://proxy:6651"},
	}
	for _, cd := range ok {
		if err := cd.Validate(); err != nil {
			t.Errorf("%+v: %v", cd, err)
		}
	}
	bad := []ClusterData{
		{ServiceURL: "https://h:8080"},
		{ServiceURL: "h:8080"},
		{ServiceURLTLS: "http://h"},
		{BrokerServiceURL: "http://h:6650"},
		{BrokerServiceURL: "pulsar://"},
		{BrokerServiceURLTLS: "pulsar://h:6651"},
		{ProxyServiceURL: "http://p"},
	}
	for _, cd := range bad {
		if err := cd.Validate(); err == nil {
			t.Errorf("%+v accepted", cd)
		}
	}
	for name, want := range map[string]bool{"us-east": true, "global": false, "": false, "a/b": false} {
		if ValidClusterName(name) != want {
			t.Errorf("ValidClusterName(%q) = %v", name, !want)
		}
	}
}
