// Package archtest holds no code: its test asserts the layering of the Go packages under
// pkg/ (docs/architecture.md): no package imports one above it, and the plugin binary never
// links the GPU agent or the simulator.
package archtest
