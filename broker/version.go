package broker

// ServerVersion is the version string the broker reports: server_version
// in CONNECTED and GET /admin/v2/brokers/version.
const ServerVersion = serverVersion
