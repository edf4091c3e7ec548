package admin

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/magnetar-mq/magnetar/ledger"
	"github.com/magnetar-mq/magnetar/metadata"
)

// The bookies' rack information (Pulsar's /admin/v2/bookies/racks-info,
// superusers only), the groups a namespace's bookie affinity group
// names (bookie_affinity.go), kept in Pulsar's /bookies node
// (ledger.RackInfoPath):
//
//	GET    /admin/v2/bookies/racks-info               {group: {bookie: {rack, hostname}}}
//	GET    /admin/v2/bookies/racks-info/{bookie}      {rack, hostname}; 404 when the bookie has none
//	POST   /admin/v2/bookies/racks-info/{bookie}?group=G   body {rack, hostname}: the bookie's entry, in group G only
//	DELETE /admin/v2/bookies/racks-info/{bookie}      removes the bookie from every group
//
// Groups and bookies take letters, digits and "-_.:", racks also "/" (a
// path-like label in Pulsar, never a file path; no ".."); 412 otherwise.

func (a *API) registerRackRoutes(rt routeTable) {
	const base = "/admin/v2/bookies/racks-info"
	superResource{List: base, Item: base + "/{bookie}", ListType: ledger.RackInfo{}, ItemType: ledger.BookieInfo{},
		GetAll: func(w http.ResponseWriter, r *http.Request, _ params) {
			ri, err := a.rackInfo(r.Context())
			a.reply(w, ri, err)
		},
		Get:    a.httpBookieRack,
		Set:    a.httpSetBookieRack,
		Delete: a.httpDeleteBookieRack,
	}.add(rt)
}

func (a *API) httpBookieRack(w http.ResponseWriter, r *http.Request, p params) {
	ri, err := a.rackInfo(r.Context())
	if err != nil {
		a.serviceError(w, err)
		return
	}
	for _, bs := range ri {
		if bi, ok := bs[p["bookie"]]; ok {
			writeJSON(w, http.StatusOK, bi)
			return
		}
	}
	writeError(w, http.StatusNotFound, "Bookie address not found: "+p["bookie"])
}

func (a *API) httpSetBookieRack(w http.ResponseWriter, r *http.Request, p params) {
	group := r.URL.Query().Get("group")
	var bi ledger.BookieInfo
	if !decodeBody(w, r, &bi, "body must be a BookieInfo JSON object {\"rack\", \"hostname\"}") {
		return
	}
	if !rackName(group) || strings.Contains(group, "/") || (bi.Rack != "" && !rackName(bi.Rack)) || !rackName(p["bookie"]) || len(bi.Hostname) > 255 {
		writeError(w, http.StatusPreconditionFailed, "a group (?group=) and the bookie take letters, digits and -_.:, a rack also /")
		return
	}
	a.replyDone(w, a.updateRackInfo(r.Context(), func(ri ledger.RackInfo) {
		for _, bs := range ri {
			delete(bs, p["bookie"])
		}
		if ri[group] == nil {
			ri[group] = map[string]ledger.BookieInfo{}
		}
		ri[group][p["bookie"]] = bi
	}))
}

// httpDeleteBookieRack removes the bookie from every group (and a group
// left empty).
func (a *API) httpDeleteBookieRack(w http.ResponseWriter, r *http.Request, p params) {
	a.replyDone(w, a.updateRackInfo(r.Context(), func(ri ledger.RackInfo) {
		for g, bs := range ri {
			delete(bs, p["bookie"])
			if len(bs) == 0 {
				delete(ri, g)
			}
		}
	}))
}

// rackName accepts a non-empty name of letters, digits and -_.:/ (at
// most 255 bytes).
func rackName(s string) bool {
	if s == "" || len(s) > 255 || strings.Contains(s, "..") {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_.:/", c)) {
			return false
		}
	}
	return true
}

var errNoMetadata = errors.New("admin: no metadata store")

func (a *API) rackInfo(ctx context.Context) (ledger.RackInfo, error) {
	if a.meta == nil {
		return nil, errNoMetadata
	}
	return ledger.ReadRackInfo(ctx, a.meta)
}

// updateRackInfo applies mutate to the rack information with a
// compare-and-set.
func (a *API) updateRackInfo(ctx context.Context, mutate func(ledger.RackInfo)) error {
	if a.meta == nil {
		return errNoMetadata
	}
	for range 10 {
		ri := ledger.RackInfo{}
		b, v, err := a.meta.Get(ctx, ledger.RackInfoPath)
		switch {
		case errors.Is(err, metadata.ErrNotFound):
			v = metadata.NotExists
		case err != nil:
			return err
		case len(b) > 0:
			if err := json.Unmarshal(b, &ri); err != nil {
				return err
			}
		}
		mutate(ri)
		out, _ := json.Marshal(ri)
		_, err = a.meta.Put(ctx, ledger.RackInfoPath, out, v)
		if errors.Is(err, metadata.ErrBadVersion) || errors.Is(err, metadata.ErrExists) {
			continue
		}
		return err
	}
	return errors.New("admin: the rack information keeps changing")
}
