package queries

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// FieldSchema is one field of a query type in the query schema (src/generated/queryschema.json,
// written by `go generate ./pkg/queries`): its JSON type and, for an enumerated field, every
// value it takes (sorted; a list field's enum is each element's). Keys are written in sorted
// order: enum, then type.
type FieldSchema struct {
	Enum []string `json:"enum,omitempty"`
	// Type is string, number, boolean, string[], number[] (the buckets query's thresholds in
	// seconds) or object (maps and structs: the raw query's matchers, regression's before).
	Type string `json:"type"`

	// goType is the field's Go type without its pointer, for the TypeScript types.
	goType reflect.Type
	// optional is false for a field whose json tag lacks omitempty (queryType).
	optional bool
}

// QuerySchema is the query schema: per query type (the registry's names), its fields by JSON
// name, derived from the request structs (their json tags and those of the embedded Common,
// the Go kind of each field) and the enum tables kept next to them (commonEnums and the
// type's own; queryType's enum is the type's name).
func QuerySchema() (map[string]map[string]FieldSchema, error) {
	out := map[string]map[string]FieldSchema{}
	for _, t := range registry {
		s, err := schemaOf(t)
		if err != nil {
			return nil, err
		}
		out[t.Name] = s
	}
	return out, nil
}

// QuerySchemaJSON returns src/generated/queryschema.json: QuerySchema as indented JSON (two
// spaces, map keys sorted) ending in a newline.
func QuerySchemaJSON() ([]byte, error) {
	s, err := QuerySchema()
	if err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// schemaOf derives one query type's fields from its request struct.
func schemaOf(t *Type) (map[string]FieldSchema, error) {
	out := map[string]FieldSchema{}
	if err := walkFields(reflect.TypeOf(t.new()).Elem(), func(name string, f reflect.StructField) error {
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		typ, err := jsonTypeOf(ft)
		if err != nil {
			return fmt.Errorf("%s.%s: %v", t.Name, f.Name, err)
		}
		fs := FieldSchema{Type: typ, goType: ft, optional: strings.Contains(f.Tag.Get("json"), ",omitempty")}
		if e, ok := t.enums[name]; ok {
			fs.Enum = slices.Sorted(slices.Values(e))
		} else if e, ok := commonEnums[name]; ok {
			fs.Enum = slices.Sorted(slices.Values(e))
		}
		if name == "queryType" {
			fs.Enum = []string{t.Name}
		}
		out[name] = fs
		return nil
	}); err != nil {
		return nil, err
	}
	for name := range t.enums {
		if _, ok := out[name]; !ok {
			return nil, fmt.Errorf("%s: the enum table names %q, which is not a field", t.Name, name)
		}
	}
	return out, nil
}

// walkFields calls fn for every exported field of the struct rt with its JSON name, in
// declaration order, entering embedded structs (Common); a field without a json name is an
// error.
func walkFields(rt reflect.Type, fn func(name string, f reflect.StructField) error) error {
	for k := 0; k < rt.NumField(); k++ {
		f := rt.Field(k)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			if err := walkFields(f.Type, fn); err != nil {
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
		if err := fn(name, f); err != nil {
			return err
		}
	}
	return nil
}

// jsonTypeOf is the schema's JSON type of a Go type (pointer removed).
func jsonTypeOf(ft reflect.Type) (string, error) {
	switch ft.Kind() {
	case reflect.String:
		return "string", nil
	case reflect.Bool:
		return "boolean", nil
	case reflect.Int, reflect.Int64, reflect.Float64:
		return "number", nil
	case reflect.Slice:
		switch ft.Elem().Kind() {
		case reflect.String:
			return "string[]", nil
		case reflect.Float64, reflect.Int:
			return "number[]", nil
		default:
			return "object", nil
		}
	case reflect.Map, reflect.Struct:
		return "object", nil
	}
	return "", fmt.Errorf("no schema type for %s", ft)
}
