package queries

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// schemaPath is the query schema the front end's registry is checked against (a jest test),
// relative to this package.
var schemaPath = filepath.Join("..", "..", "src", "generated", "queryschema.json")

// fieldSchema is one field of a query type in src/generated/queryschema.json (keys written
// in sorted order: enum, then type; enum values sorted).
type fieldSchema struct {
	Enum []string `json:"enum,omitempty"`
	// Type is string, number, boolean, string[], number[] (the buckets query's thresholds in
	// seconds) or object (maps: the raw query's matchers).
	Type string `json:"type"`
}

// schemaOf derives a query type's fields from its request struct: the json tags of the struct
// and of the embedded Common, the Go kind of each field, and the enum tables kept next to the
// structs (commonEnums and the type's own; queryType's enum is the type's name).
func schemaOf(t *Type) (map[string]fieldSchema, error) {
	out := map[string]fieldSchema{}
	var walk func(rt reflect.Type) error
	walk = func(rt reflect.Type) error {
		for k := 0; k < rt.NumField(); k++ {
			f := rt.Field(k)
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				if err := walk(f.Type); err != nil {
					return err
				}
				continue
			}
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				return fmt.Errorf("%s.%s has no json name", rt.Name(), f.Name)
			}
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			var typ string
			switch ft.Kind() {
			case reflect.String:
				typ = "string"
			case reflect.Bool:
				typ = "boolean"
			case reflect.Int, reflect.Int64, reflect.Float64:
				typ = "number"
			case reflect.Slice:
				switch ft.Elem().Kind() {
				case reflect.String:
					typ = "string[]"
				case reflect.Float64, reflect.Int:
					typ = "number[]"
				default:
					typ = "object"
				}
			case reflect.Map, reflect.Struct:
				typ = "object"
			default:
				return fmt.Errorf("%s.%s: no schema type for %s", rt.Name(), f.Name, ft)
			}
			fs := fieldSchema{Type: typ}
			if e, ok := t.enums[name]; ok {
				fs.Enum = slices.Sorted(slices.Values(e))
			} else if e, ok := commonEnums[name]; ok {
				fs.Enum = slices.Sorted(slices.Values(e))
			}
			if name == "queryType" {
				fs.Enum = []string{t.Name}
			}
			out[name] = fs
		}
		return nil
	}
	if err := walk(reflect.TypeOf(t.new()).Elem()); err != nil {
		return nil, err
	}
	for name := range t.enums {
		if _, ok := out[name]; !ok {
			return nil, fmt.Errorf("%s: the enum table names %q, which is not a field", t.Name, name)
		}
	}
	return out, nil
}

// TestQuerySchemaIsCommitted derives the query schema from the request structs and compares
// it with the committed src/generated/queryschema.json; INFERSCOPE_UPDATE_SCHEMA=1 rewrites
// the file.
func TestQuerySchemaIsCommitted(t *testing.T) {
	all := map[string]map[string]fieldSchema{}
	for _, ty := range registry {
		s, err := schemaOf(ty)
		require.NoError(t, err)
		all[ty.Name] = s
	}
	want, err := json.MarshalIndent(all, "", "  ") // map keys are sorted
	require.NoError(t, err)
	want = append(want, '\n')
	if os.Getenv("INFERSCOPE_UPDATE_SCHEMA") == "1" {
		require.NoError(t, os.MkdirAll(filepath.Dir(schemaPath), 0o755))
		require.NoError(t, os.WriteFile(schemaPath, want, 0o644))
	}
	got, err := os.ReadFile(schemaPath)
	require.NoError(t, err, "run INFERSCOPE_UPDATE_SCHEMA=1 go test ./pkg/queries -run TestQuerySchemaIsCommitted")
	if !bytes.Equal(got, want) {
		t.Fatalf("src/generated/queryschema.json differs from the Go request structs; run INFERSCOPE_UPDATE_SCHEMA=1 go test ./pkg/queries -run TestQuerySchemaIsCommitted and commit it.\nderived:\n%s", want)
	}
}
