package admin

import (
	"net/http"
	"os"

	"github.com/magnetar-mq/magnetar/auth"
)

// GET /status.html is Pulsar's health page for load balancers (VIP
// status), with Pulsar's semantics: "OK" (200, text/plain) while the
// broker is started and not closing and the operator's status file
// (statusFilePath, Deps.StatusFile) exists as a regular file; 404
// otherwise, so removing the file takes a broker out of a load
// balancer's rotation before it is stopped. Without a status file
// configured the page is always 404, as in Pulsar. The page is public
// (a load balancer has no credentials) and tells nothing but the state.

func (a *API) registerStatusRoute(rt routeTable) {
	rt.Handle("GET", "/status.html", auth.AccessPublic, a.httpStatusPage)
}

func (a *API) httpStatusPage(w http.ResponseWriter, _ *http.Request, _ params) {
	if a.statusFile == "" || !a.own.Ready() {
		http.Error(w, "Not Found", http.StatusNotFound)
		return
	}
	if fi, err := os.Stat(a.statusFile); err != nil || !fi.Mode().IsRegular() {
		http.Error(w, "Not Found", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte("OK"))
}
