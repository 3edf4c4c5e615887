package queries

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGeneratedSchemaIsCommitted compares the committed query schema and TypeScript query
// types (src/generated/, read by the front end's registry check and editors) with what the
// request structs generate now, and fails naming `go generate ./pkg/queries` when they differ.
func TestGeneratedSchemaIsCommitted(t *testing.T) {
	for _, c := range []struct {
		name string
		gen  func() ([]byte, error)
	}{
		{"queryschema.json", QuerySchemaJSON},
		{"queryTypes.ts", QueryTypesTS},
	} {
		t.Run(c.name, func(t *testing.T) {
			want, err := c.gen()
			require.NoError(t, err)
			path := filepath.Join("..", "..", "src", "generated", c.name)
			got, err := os.ReadFile(path)
			require.NoError(t, err, "src/generated/%s is missing: run `go generate ./pkg/queries` and commit it", c.name)
			if !bytes.Equal(got, want) {
				t.Fatalf("src/generated/%s differs from what the Go request structs generate: run `go generate ./pkg/queries` and commit it.\ngenerated:\n%s", c.name, want)
			}
		})
	}
}

// TestSchemaRefusesAnEnumOfNoField: an enum table naming a field the struct lacks is an error
// of the schema, not a silently unused table.
func TestSchemaRefusesAnEnumOfNoField(t *testing.T) {
	ty := register("events", false, map[string][]string{"nosuch": {"a"}}, runEvents)
	_, err := schemaOf(ty)
	require.ErrorContains(t, err, `the enum table names "nosuch"`)
}
