package sim

import "github.com/inferscope/inferscope-llm-datasource/pkg/enginemodel"

// The engine model lives in pkg/enginemodel (I/O-free, so that the plugin's capacity twin may
// link it); these aliases keep the simulator's API whole for its users.

// Config is enginemodel.Config: the engine, GPU, workload and scenario configuration.
type Config = enginemodel.Config

// LengthDist is enginemodel.LengthDist: a token-length distribution.
type LengthDist = enginemodel.LengthDist

// ModelSpec is enginemodel.ModelSpec: the served model's size figures.
type ModelSpec = enginemodel.ModelSpec

// GPUSpec is enginemodel.GPUSpec: the GPU's roofline, power and thermal figures.
type GPUSpec = enginemodel.GPUSpec

// APIFaults is enginemodel.APIFaults: client-visible faults the Server injects.
type APIFaults = enginemodel.APIFaults

// TraceEntry is enginemodel.TraceEntry: one request of an arrival trace.
type TraceEntry = enginemodel.TraceEntry

// Version is enginemodel.Version: a simulated vLLM release line.
type Version = enginemodel.Version

// Request is enginemodel.Request: one simulated request and its ground truth.
type Request = enginemodel.Request

// Truth is enginemodel.Truth: a finished request's true stage times (seconds).
type Truth = enginemodel.Truth

// Event is enginemodel.Event: one thing that happened to a request.
type Event = enginemodel.Event

// EventKind is enginemodel.EventKind.
type EventKind = enginemodel.EventKind

// Options is enginemodel.Options: what a Sim records.
type Options = enginemodel.Options

// State is enginemodel.State: a summary of the engine and GPU now.
type State = enginemodel.State

// Supported versions (enginemodel's).
const (
	V06  = enginemodel.V06
	V010 = enginemodel.V010
	V011 = enginemodel.V011
	V013 = enginemodel.V013
)

// Finish reasons (label finished_reason of vllm:request_success_total).
const (
	ReasonStop   = enginemodel.ReasonStop
	ReasonLength = enginemodel.ReasonLength
	ReasonAbort  = enginemodel.ReasonAbort
)

// Event kinds (enginemodel's).
const (
	EventToken  = enginemodel.EventToken
	EventFinish = enginemodel.EventFinish
	EventAbort  = enginemodel.EventAbort
)

var (
	// Versions lists the supported versions, oldest first.
	Versions = enginemodel.Versions
	// DefaultStart is simulated time 0 when Options.Start is zero.
	DefaultStart = enginemodel.DefaultStart
	// ErrDown is returned by Submit while the simulated server restarts.
	ErrDown = enginemodel.ErrDown
)

// DefaultConfig returns enginemodel.DefaultConfig(): a healthy Llama-3.1-8B on one H100 SXM
// at 4 requests/s, vLLM 0.11.
func DefaultConfig() Config { return enginemodel.DefaultConfig() }

// ParseVersion is enginemodel.ParseVersion.
func ParseVersion(s string) (Version, error) { return enginemodel.ParseVersion(s) }
