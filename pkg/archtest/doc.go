// Package archtest holds no code: its test asserts the layering of the Go packages under
// pkg/ (docs/architecture.md): no package imports one above it, the plugin binary never
// links the GPU agent, the probe or the simulator (its server, scenarios and pages), and the
// engine model the plugin's capacity twin shares with the simulator does no I/O.
package archtest
