package queries

// The query schema and the front end's query types are written from the request structs by
// `go generate ./pkg/queries` (run from the repository root; the paths are relative to this
// package); TestGeneratedSchemaIsCommitted fails when the committed files differ.
//go:generate go run ./internal/schemagen -json ../../src/generated/queryschema.json -ts ../../src/generated/queryTypes.ts
