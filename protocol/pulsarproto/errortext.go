package pulsarproto

import (
	"regexp"
	"sync"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/magnetar-mq/magnetar/protocol/pulsarproto/pb"
)

// Errors sent to binary-protocol clients carry no internal detail: a
// message that names an absolute path (a metadata node such as
// /admin/policies/t/ns, /managed-ledgers/..., a ledger or data file) is
// replaced by a generic text for its ServerError code (ScrubError; the
// sender logs the original). The code itself is never changed, so
// clients react as they would to Pulsar's answer.

// internalPath matches an absolute path of two or more components that
// starts a word; the "//" of a topic URL (persistent://t/ns/x) does not.
var internalPath = regexp.MustCompile(`(?:^|[\s"'(\[=,;:])/[\w.@%+=-]+/`)

// errorCarriers are the payload fields of BaseCommand whose message type
// has a string message or error_message field.
var errorCarriers = func() []protoreflect.FieldDescriptor {
	var out []protoreflect.FieldDescriptor
	fields := (&pb.BaseCommand{}).ProtoReflect().Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		if f := fields.Get(i); f.Kind() == protoreflect.MessageKind && errorField(f.Message()) != nil {
			out = append(out, f)
		}
	}
	return out
}()

// carrierOf caches, per command type, the error-carrying payload field
// set on commands of that type (nil: the type carries none).
var carrierOf sync.Map // pb.BaseCommand_Type -> protoreflect.FieldDescriptor (or nil)

func carrier(cmd *pb.BaseCommand) protoreflect.FieldDescriptor {
	if f, ok := carrierOf.Load(cmd.GetType()); ok {
		fd, _ := f.(protoreflect.FieldDescriptor)
		return fd
	}
	m := cmd.ProtoReflect()
	var found protoreflect.FieldDescriptor
	for _, f := range errorCarriers {
		if m.Has(f) {
			found = f
			break
		}
	}
	carrierOf.Store(cmd.GetType(), found)
	return found
}

func errorField(m protoreflect.MessageDescriptor) protoreflect.FieldDescriptor {
	for _, n := range []protoreflect.Name{"message", "error_message"} {
		if f := m.Fields().ByName(n); f != nil && f.Kind() == protoreflect.StringKind {
			return f
		}
	}
	return nil
}

// NamesInternalPath reports whether an error text names an absolute
// path of two or more components (see internalPath), which ScrubError
// would withhold.
func NamesInternalPath(msg string) bool { return internalPath.MatchString(msg) }

// ScrubError replaces an error text of cmd (the message or error_message
// of whichever payload of cmd carries one) that names an internal path
// with a generic one for its code. It returns the text withheld and the
// code's name ("" when the payload has none); ok is false, and cmd
// unchanged, when there was nothing to withhold. The carrying field is
// found by reflection once per command type, then cached.
func ScrubError(cmd *pb.BaseCommand) (withheld, code string, ok bool) {
	pf := carrier(cmd)
	if pf == nil {
		return "", "", false
	}
	m := cmd.ProtoReflect()
	if !m.Has(pf) {
		return "", "", false
	}
	payload := m.Get(pf).Message()
	ef := errorField(payload.Descriptor())
	msg := payload.Get(ef).String()
	if !internalPath.MatchString(msg) {
		return "", "", false
	}
	for _, n := range []protoreflect.Name{"error", "error_code"} {
		if f := payload.Descriptor().Fields().ByName(n); f != nil && f.Kind() == protoreflect.EnumKind && payload.Has(f) {
			code = pb.ServerError(payload.Get(f).Enum()).String()
		}
	}
	payload.Set(ef, protoreflect.ValueOfString(genericMessage(code)))
	return msg, code, true
}

// genericMessage is the text a client gets for code when the real one was
// withheld.
func genericMessage(code string) string {
	switch code {
	case pb.ServerError_MetadataError.String():
		return "Metadata store error (details in the broker log)"
	case pb.ServerError_PersistenceError.String():
		return "Persistence error (details in the broker log)"
	case pb.ServerError_ServiceNotReady.String():
		return "Service not ready (details in the broker log)"
	case pb.ServerError_TopicNotFound.String():
		return "Topic not found"
	}
	return "Internal error (details in the broker log)"
}
