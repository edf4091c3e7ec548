package broker

// ManagedLedger is what a persistent topic needs from its storage.
// (Placeholder until the mledger API lands.)
type ManagedLedger interface{}
