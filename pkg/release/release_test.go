package release

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// testdata/plugin.schema.json is Grafana's plugin.json schema, unchanged:
// grafana/grafana, docs/sources/developers/plugins/plugin.schema.json at
// commit 021371ce6188d520574474e9024feeabd1868ebb (the file plugin.json's
// "$schema" names, https://raw.githubusercontent.com/grafana/grafana/main/docs/sources/developers/plugins/plugin.schema.json).
func loadSchema(t *testing.T) *SchemaValidator {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "plugin.schema.json"))
	require.NoError(t, err)
	v, err := NewSchemaValidator(b)
	require.NoError(t, err)
	return v
}

// builtPluginJSON is the repository's plugin.json as `npm run build` writes
// it into dist/: the placeholders replaced by a version and a date.
func builtPluginJSON(t *testing.T, version string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "src", "plugin.json"))
	require.NoError(t, err)
	s := strings.ReplaceAll(string(b), "%VERSION%", version)
	s = strings.ReplaceAll(s, "%TODAY%", "2026-12-02")
	// What the scaffold's BuildModeWebpackPlugin appends.
	i := strings.LastIndex(s, "}")
	return []byte(s[:i] + `, "buildMode": "production"}` + "\n")
}

func TestPluginJSONSatisfiesGrafanaSchema(t *testing.T) {
	v := loadSchema(t)
	built, err := withoutBuildMode(builtPluginJSON(t, "0.1.0"))
	require.NoError(t, err)
	require.NoError(t, v.Validate(built), "plugin.json as built into dist/")
	raw, err := os.ReadFile(filepath.Join("..", "..", "src", "plugin.json"))
	require.NoError(t, err)
	require.NoError(t, v.Validate(raw), "plugin.json with its placeholders (the schema allows them)")
}

func TestSchemaRejectsWhatGrafanaRejects(t *testing.T) {
	v := loadSchema(t)
	base := map[string]any{}
	built, err := withoutBuildMode(builtPluginJSON(t, "0.1.0"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(built, &base))
	cases := map[string]func(m map[string]any){
		"unknown top-level field":     func(m map[string]any) { m["targets"] = []string{} },
		"no dependencies":             func(m map[string]any) { delete(m, "dependencies") },
		"id against the naming rules": func(m map[string]any) { m["id"] = "Inferscope" },
		"version not semver": func(m map[string]any) {
			m["info"].(map[string]any)["version"] = "v1"
		},
		"grafanaDependency not a range": func(m map[string]any) {
			m["dependencies"].(map[string]any)["grafanaDependency"] = "Grafana 11"
		},
		"link that is not a URI": func(m map[string]any) {
			m["info"].(map[string]any)["links"] = []map[string]string{{"name": "x", "url": "not a uri"}}
		},
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			var m map[string]any
			b, _ := json.Marshal(base)
			require.NoError(t, json.Unmarshal(b, &m))
			mutate(m)
			b, _ = json.Marshal(m)
			require.Error(t, v.Validate(b))
		})
	}
}

// Minimal executable headers, laid out by hand from the formats'
// specifications (System V ABI ELF header, Mach-O mach_header_64, PE/COFF
// file header), so that binaryPlatform is checked against bytes it did not
// produce.
func elfHeader(class64 bool, machine uint16) []byte {
	var b bytes.Buffer
	class := byte(1)
	if class64 {
		class = 2
	}
	b.Write([]byte{0x7f, 'E', 'L', 'F', class, 1, 1, 0})
	b.Write(make([]byte, 8))
	le := binary.LittleEndian
	_ = binary.Write(&b, le, uint16(2)) // ET_EXEC
	_ = binary.Write(&b, le, machine)
	_ = binary.Write(&b, le, uint32(1))
	if class64 {
		_ = binary.Write(&b, le, [3]uint64{}) // entry, phoff, shoff
		_ = binary.Write(&b, le, uint32(0))   // flags
		_ = binary.Write(&b, le, [6]uint16{64, 56, 0, 64, 0, 0})
	} else {
		_ = binary.Write(&b, le, [3]uint32{})
		_ = binary.Write(&b, le, uint32(0x05000000)) // EABI5
		_ = binary.Write(&b, le, [6]uint16{52, 32, 0, 40, 0, 0})
	}
	return b.Bytes()
}

func machoHeader(cpu uint32) []byte {
	var b bytes.Buffer
	_ = binary.Write(&b, binary.LittleEndian, [8]uint32{0xfeedfacf, cpu, 0, 2, 0, 0, 0, 0})
	return b.Bytes()
}

func peHeader(machine uint16) []byte {
	b := make([]byte, 64)
	copy(b, "MZ")
	binary.LittleEndian.PutUint32(b[0x3c:], 64)
	var h bytes.Buffer
	h.Write(b)
	h.WriteString("PE\x00\x00")
	_ = binary.Write(&h, binary.LittleEndian, struct {
		Machine, Sections uint16
		Time, Sym, NSym   uint32
		OptSize, Chars    uint16
	}{Machine: machine, Chars: 0x22})
	// debug/pe reads a 96-byte DOS header whatever e_lfanew says.
	h.Write(make([]byte, 64))
	return h.Bytes()
}

var headers = map[string][]byte{
	"linux/amd64":   elfHeader(true, 62),
	"linux/arm64":   elfHeader(true, 183),
	"linux/arm":     elfHeader(false, 40),
	"darwin/amd64":  machoHeader(0x01000007),
	"darwin/arm64":  machoHeader(0x0100000c),
	"windows/amd64": peHeader(0x8664),
}

func TestBinaryPlatformReadsHeaders(t *testing.T) {
	for want, b := range headers {
		got, err := binaryPlatform(b)
		require.NoError(t, err, want)
		require.Equal(t, want, got)
	}
	_, err := binaryPlatform([]byte("#!/bin/sh\n"))
	require.Error(t, err)
}

type entry struct {
	body []byte
	mode os.FileMode
}

// goodFiles is a complete archive's content below the top folder.
func goodFiles(t *testing.T) map[string]entry {
	t.Helper()
	files := map[string]entry{
		"plugin.json":   {body: builtPluginJSON(t, "0.1.0")},
		"module.js":     {body: []byte("define([], function(){})")},
		"LICENSE":       {body: []byte("Apache License")},
		"README.md":     {body: []byte("# Inferscope\n\nSee [query types](#query-types) and [Grafana](https://grafana.com/).\n\n## Query types\n")},
		"CHANGELOG.md":  {body: []byte("# Changelog\n")},
		"img/logo.svg":  {body: []byte("<svg/>")},
		"dashboards/":   {},
		"MANIFEST.txt":  {body: []byte("signature")},
		"img/extra.png": {body: []byte("png")},
	}
	var meta pluginMeta
	require.NoError(t, json.Unmarshal(files["plugin.json"].body, &meta))
	for _, s := range meta.Info.Screenshots {
		files[s.Path] = entry{body: []byte("png")}
	}
	for _, inc := range meta.Includes {
		files[inc.Path] = entry{body: []byte("{}")}
	}
	for p, h := range headers {
		goos, goarch, _ := strings.Cut(p, "/")
		files[ExecutableName(meta.Executable, goos, goarch)] = entry{body: h, mode: 0o755}
	}
	return files
}

// writeArchive writes files under top/ into dir/name and its checksum file.
func writeArchive(t *testing.T, dir, name, top string, files map[string]entry) string {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for p, e := range files {
		full := p
		if top != "" {
			full = top + "/" + p
		}
		h := &zip.FileHeader{Name: full, Method: zip.Deflate}
		mode := e.mode
		if mode == 0 {
			mode = 0o644
		}
		if strings.HasSuffix(full, "/") {
			mode |= os.ModeDir
		}
		h.SetMode(mode)
		w, err := zw.CreateHeader(h)
		require.NoError(t, err)
		_, err = w.Write(e.body)
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o644))
	sum := sha256.Sum256(buf.Bytes())
	require.NoError(t, os.WriteFile(ChecksumName(p), []byte(hex.EncodeToString(sum[:])+"  "+name+"\n"), 0o644))
	return p
}

const id = "inferscope-llm-datasource"

func TestCheckArchiveAcceptsAGoodArchive(t *testing.T) {
	schema := loadSchema(t)
	p := writeArchive(t, t.TempDir(), id+"-0.1.0.zip", id, goodFiles(t))
	require.Empty(t, CheckArchive(p, Platforms, schema))
}

func TestCheckArchiveNamesEachProblem(t *testing.T) {
	schema := loadSchema(t)
	linuxExe := ExecutableName("gpx_inferscope", "linux", "amd64")
	cases := []struct {
		name   string
		top    string
		mutate func(files map[string]entry)
		after  func(t *testing.T, archive string)
		want   string
	}{
		{name: "LICENSE missing", mutate: func(f map[string]entry) { delete(f, "LICENSE") }, want: "LICENSE is missing"},
		{name: "module.js empty", mutate: func(f map[string]entry) { f["module.js"] = entry{} }, want: "module.js is empty"},
		{name: "wrong top folder", top: "dist", want: `the top folder is "dist"`},
		{name: "no top folder", top: "-", want: "top-level entries"},
		{name: "executable missing", mutate: func(f map[string]entry) { delete(f, "gpx_inferscope_darwin_arm64") }, want: "gpx_inferscope_darwin_arm64 (the executable for darwin/arm64) is missing"},
		{name: "windows executable without .exe", mutate: func(f map[string]entry) {
			f["gpx_inferscope_windows_amd64"] = f["gpx_inferscope_windows_amd64.exe"]
			delete(f, "gpx_inferscope_windows_amd64.exe")
		}, want: "gpx_inferscope_windows_amd64.exe (the executable for windows/amd64) is missing"},
		{name: "executable for another platform", mutate: func(f map[string]entry) {
			f[linuxExe] = entry{body: headers["linux/arm64"], mode: 0o755}
		}, want: "gpx_inferscope_linux_amd64 is built for linux/arm64, not linux/amd64"},
		{name: "executable bit unset", mutate: func(f map[string]entry) {
			f[linuxExe] = entry{body: headers["linux/amd64"], mode: 0o644}
		}, want: "gpx_inferscope_linux_amd64 is not executable"},
		{name: "README starts with a comment", mutate: func(f map[string]entry) {
			f["README.md"] = entry{body: []byte("<!-- generated -->\n\n# Inferscope\n")}
		}, want: "first line is an HTML comment"},
		{name: "README relative link", mutate: func(f map[string]entry) {
			f["README.md"] = entry{body: []byte("# Inferscope\n\n![shot](img/screenshots/overview.png) [docs](docs/slo.md)\n")}
		}, want: `relative link "docs/slo.md"`},
		{name: "plugin.json placeholder", mutate: func(f map[string]entry) {
			f["plugin.json"] = entry{body: bytes.ReplaceAll(f["plugin.json"].body, []byte("2026-12-02"), []byte("%TODAY%"))}
		}, want: "placeholder"},
		{name: "plugin.json against the schema", mutate: func(f map[string]entry) {
			f["plugin.json"] = entry{body: bytes.Replace(f["plugin.json"].body, []byte(`"type": "datasource"`), []byte(`"type": "datasource", "targets": []`), 1)}
		}, want: "plugin.json schema"},
		{name: "plugin.json from a development build", mutate: func(f map[string]entry) {
			f["plugin.json"] = entry{body: bytes.ReplaceAll(f["plugin.json"].body, []byte(`"production"`), []byte(`"development"`))}
		}, want: `buildMode is "development"`},
		{name: "plugin.json version differs from the name", mutate: func(f map[string]entry) {
			f["plugin.json"] = entry{body: builtPluginJSON(t, "0.2.0")}
		}, want: `name says version "0.1.0", plugin.json says "0.2.0"`},
		{name: "screenshot referenced but absent", mutate: func(f map[string]entry) { delete(f, "img/screenshots/gpu.png") }, want: "references img/screenshots/gpu.png"},
		{name: "checksum wrong", after: func(t *testing.T, a string) {
			require.NoError(t, os.WriteFile(ChecksumName(a), []byte(strings.Repeat("0", 64)+"  "+filepath.Base(a)+"\n"), 0o644))
		}, want: "the archive's SHA-256 is"},
		{name: "checksum names another file", after: func(t *testing.T, a string) {
			b, err := os.ReadFile(ChecksumName(a))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(ChecksumName(a), bytes.ReplaceAll(b, []byte(".zip"), []byte(".tar.gz")), 0o644))
		}, want: "not the archive"},
		{name: "checksum file missing", after: func(t *testing.T, a string) { require.NoError(t, os.Remove(ChecksumName(a))) }, want: "checksum file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := goodFiles(t)
			if c.mutate != nil {
				c.mutate(files)
			}
			top := id
			switch c.top {
			case "":
			case "-":
				top = ""
			default:
				top = c.top
			}
			a := writeArchive(t, t.TempDir(), id+"-0.1.0.zip", top, files)
			if c.after != nil {
				c.after(t, a)
			}
			errs := CheckArchive(a, Platforms, schema)
			require.NotEmpty(t, errs)
			var msgs []string
			for _, e := range errs {
				msgs = append(msgs, e.Error())
			}
			require.Contains(t, strings.Join(msgs, "\n"), c.want)
		})
	}
}

// TestReleaseScriptPlatforms: scripts/release.sh builds every platform the
// archive check expects, and those are the SDK's `mage -v` platforms.
func TestReleaseScriptPlatforms(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "scripts", "release.sh"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^ALL_PLATFORMS="([^"]*)"`).FindSubmatch(b)
	require.NotNil(t, m, "scripts/release.sh has no ALL_PLATFORMS=\"...\" line")
	require.Equal(t, Platforms, strings.Fields(string(m[1])))
	require.ElementsMatch(t, []string{"linux/amd64", "linux/arm64", "linux/arm", "darwin/amd64", "darwin/arm64", "windows/amd64"}, Platforms,
		"build.BuildAll in grafana-plugin-sdk-go builds Linux, Windows, Darwin, DarwinARM64, LinuxARM64, LinuxARM")
}

// TestReleaseArchive checks the archive scripts/release.sh built, named by
// INFERSCOPE_RELEASE_ARCHIVE, for the platforms in
// INFERSCOPE_RELEASE_PLATFORMS (space or comma separated; all Platforms when
// unset). scripts/release.sh and scripts/test.sh run it; without the
// variable it skips.
func TestReleaseArchive(t *testing.T) {
	archive := os.Getenv("INFERSCOPE_RELEASE_ARCHIVE")
	if archive == "" {
		t.Skip("INFERSCOPE_RELEASE_ARCHIVE is not set (scripts/release.sh sets it)")
	}
	platforms := Platforms
	if s := os.Getenv("INFERSCOPE_RELEASE_PLATFORMS"); s != "" {
		platforms = strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
	}
	errs := CheckArchive(archive, platforms, loadSchema(t))
	for _, e := range errs {
		t.Error(e)
	}
	if len(errs) == 0 {
		t.Logf("%s: layout, plugin.json schema, README, checksum and executables for %v are as a catalog submission needs", archive, platforms)
	}
}
