package policy

import (
	"errors"
	"testing"
)

func TestOffloadCheckAllowed(t *testing.T) {
	a := OffloadAllowed{FileSystemRoots: []string{"/srv/tier", "file:///mnt/cold/"}, ServiceEndpoints: []string{"http://s3.local:9000", "https://S3.example.com/"},
		ProfilePaths: []string{"/etc/magnetar/core-site.xml"}}
	for _, c := range []struct {
		o  OffloadPolicies
		ok bool
	}{
		{OffloadPolicies{FileSystemURI: "file:///srv/tier"}, true},
		{OffloadPolicies{FileSystemURI: "file:///srv/tier/t1/ns"}, true},
		{OffloadPolicies{FileSystemURI: "/mnt/cold/x"}, true},
		{OffloadPolicies{FileSystemURI: "file:///srv/tier2"}, false},
		{OffloadPolicies{FileSystemURI: "file:///srv/tier/../etc"}, false},
		{OffloadPolicies{FileSystemURI: "file://otherhost/srv/tier"}, false},
		{OffloadPolicies{FileSystemURI: "hdfs://nn/srv/tier"}, false},
		{OffloadPolicies{FileSystemURI: "srv/tier"}, false},
		{OffloadPolicies{FileSystemProfilePath: "/etc/magnetar/core-site.xml"}, true},
		{OffloadPolicies{FileSystemProfilePath: "/srv/tier/site.xml"}, true},
		{OffloadPolicies{FileSystemProfilePath: "/etc/passwd"}, false},
		{OffloadPolicies{S3ManagedLedgerOffloadServiceEndpoint: "http://S3.local:9000/"}, true},
		{OffloadPolicies{S3ManagedLedgerOffloadServiceEndpoint: "https://s3.example.com:443"}, true},
		{OffloadPolicies{ManagedLedgerOffloadServiceEndpoint: "s3.example.com"}, true},
		{OffloadPolicies{S3ManagedLedgerOffloadServiceEndpoint: "http://s3.local:9001"}, false},
		{OffloadPolicies{S3ManagedLedgerOffloadServiceEndpoint: "http://s3.example.com"}, false},
		{OffloadPolicies{S3ManagedLedgerOffloadServiceEndpoint: "http://user:pw@s3.local:9000"}, false},
		{OffloadPolicies{ManagedLedgerOffloadServiceEndpoint: "http://169.254.169.254"}, false},
		{OffloadPolicies{ManagedLedgerOffloadDriver: "S3", S3ManagedLedgerOffloadBucket: "b"}, true},
	} {
		err := c.o.CheckAllowed(a)
		var bad *BadValueError
		if (err == nil) != c.ok || (err != nil && !errors.As(err, &bad)) {
			t.Errorf("CheckAllowed(%+v) = %v, want ok=%v", c.o, err, c.ok)
		}
	}
	if err := (&OffloadPolicies{FileSystemURI: "/srv/tier"}).CheckAllowed(OffloadAllowed{}); err == nil {
		t.Error("an empty allow-list allowed a directory")
	}
}
