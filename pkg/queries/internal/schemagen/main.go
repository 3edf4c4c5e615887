// Command schemagen writes the query schema (queries.QuerySchemaJSON) and the TypeScript
// query types (queries.QueryTypesTS) derived from the request structs of pkg/queries, for
// `go generate ./pkg/queries`; the -json and -ts flags name the files.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/inferscope/inferscope-llm-datasource/pkg/queries"
)

func main() {
	jsonPath := flag.String("json", "", "where to write the query schema (queryschema.json)")
	tsPath := flag.String("ts", "", "where to write the TypeScript query types (queryTypes.ts)")
	flag.Parse()
	if *jsonPath == "" || *tsPath == "" {
		fmt.Fprintln(os.Stderr, "schemagen: -json and -ts name the files to write")
		os.Exit(2)
	}
	for _, out := range []struct {
		path string
		gen  func() ([]byte, error)
	}{{*jsonPath, queries.QuerySchemaJSON}, {*tsPath, queries.QueryTypesTS}} {
		b, err := out.gen()
		if err == nil {
			err = os.MkdirAll(filepath.Dir(out.path), 0o755)
		}
		if err == nil {
			err = os.WriteFile(out.path, b, 0o644)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "schemagen: %s: %v\n", out.path, err)
			os.Exit(1)
		}
	}
}
