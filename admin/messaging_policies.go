package admin

import (
	"errors"
	"strconv"
	"strings"

	"github.com/magnetar-mq/magnetar/policy"
	"github.com/magnetar-mq/magnetar/schema"
)

// registerMessagingPolicyRoutes installs the namespace schema and
// compaction policies (Pulsar's paths and bodies):
//
//	{GET,PUT,POST,DELETE} .../schemaCompatibilityStrategy           "BACKWARD"
//	{GET,PUT,POST,DELETE} .../schemaAutoUpdateCompatibilityStrategy "Backward"
//	{GET,POST,DELETE}     .../isAllowAutoUpdateSchema               true
//	{GET,POST,DELETE}     .../schemaValidationEnforced              true
//	{GET,PUT,POST,DELETE} .../compactionThreshold                   bytes
func (a *API) registerMessagingPolicyRoutes(rt routeTable) {
	const base = "/admin/v2/namespaces/{tenant}/{ns}/"
	strat := func(name string, field func(*policy.Policies) *string, def string) {
		rt.Handle("GET", base+name, a.getPolicy(func(p *policy.Policies) any {
			if v := *field(p); v != "" {
				return v
			}
			return def
		}))
		set := a.setPolicy(func(p *policy.Policies, body []byte) error {
			s := strings.Trim(strings.TrimSpace(string(body)), `"`)
			if _, err := schema.ParseStrategy(s); err != nil {
				return &policy.BadValueError{Err: err}
			}
			*field(p) = s
			return nil
		})
		rt.Handle("PUT", base+name, set)
		rt.Handle("POST", base+name, set)
		rt.Handle("DELETE", base+name, a.setPolicy(func(p *policy.Policies, _ []byte) error { *field(p) = ""; return nil }))
	}
	strat("schemaCompatibilityStrategy", func(p *policy.Policies) *string { return &p.SchemaCompatibilityStrategy }, "UNDEFINED")
	strat("schemaAutoUpdateCompatibilityStrategy", func(p *policy.Policies) *string { return &p.SchemaAutoUpdateCompatibilityStrategy }, "Full")

	boolean := func(name string, field func(*policy.Policies) **bool, def bool) {
		rt.Handle("GET", base+name, a.getPolicy(func(p *policy.Policies) any {
			if v := *field(p); v != nil {
				return *v
			}
			return def
		}))
		set := a.setPolicy(func(p *policy.Policies, body []byte) error {
			v, err := strconv.ParseBool(strings.Trim(strings.TrimSpace(string(body)), `"`))
			if err != nil {
				return &policy.BadValueError{Err: errors.New("body must be true or false")}
			}
			*field(p) = &v
			return nil
		})
		rt.Handle("POST", base+name, set)
		rt.Handle("PUT", base+name, set)
		rt.Handle("DELETE", base+name, a.setPolicy(func(p *policy.Policies, _ []byte) error { *field(p) = nil; return nil }))
	}
	boolean("isAllowAutoUpdateSchema", func(p *policy.Policies) **bool { return &p.IsAllowAutoUpdateSchema }, true)
	boolean("schemaValidationEnforced", func(p *policy.Policies) **bool { return &p.SchemaValidationEnforced }, false)

	rt.Handle("GET", base+"compactionThreshold", a.getPolicy(func(p *policy.Policies) any { return p.CompactionThreshold }))
	setThreshold := a.setPolicy(func(p *policy.Policies, body []byte) error {
		n, err := strconv.ParseInt(strings.Trim(strings.TrimSpace(string(body)), `"`), 10, 64)
		if err != nil || n < 0 {
			return &policy.BadValueError{Err: errors.New("compactionThreshold must be a byte count >= 0")}
		}
		p.CompactionThreshold = &n
		return nil
	})
	rt.Handle("PUT", base+"compactionThreshold", setThreshold)
	rt.Handle("POST", base+"compactionThreshold", setThreshold)
	rt.Handle("DELETE", base+"compactionThreshold", a.setPolicy(func(p *policy.Policies, _ []byte) error { p.CompactionThreshold = nil; return nil }))
}
