package httpapi

import (
	"encoding/json"
	"log/slog"
	"net/http"
)

// WriteJSON writes v as a JSON response with the given status. The body
// is the JSON value alone, without the newline json.Encoder appends:
// Pulsar's admin tools read some answers (a string policy such as
// "Full") as raw bytes, and a trailing newline makes them unparsable.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		WriteError(w, http.StatusInternalServerError, InternalReason)
		slog.Default().Error("HTTP answer not encodable as JSON", "err", err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// WriteError writes Pulsar's error shape {"reason": msg}.
func WriteError(w http.ResponseWriter, status int, msg string) {
	WriteJSON(w, status, map[string]string{"reason": msg})
}

// InternalReason is the reason of every 500: internal errors name
// metadata paths, files and hosts, which are the operator's business.
const InternalReason = "Internal server error; the broker log has the details"

// InternalError logs err with what was being done and answers 500 with a
// generic reason: the error's text never reaches the client.
func InternalError(w http.ResponseWriter, log *slog.Logger, what string, err error) {
	if log == nil {
		log = slog.Default()
	}
	log.Error("HTTP request failed", "op", what, "err", err)
	WriteError(w, http.StatusInternalServerError, InternalReason)
}
