// Package release checks a plugin release archive (the zip scripts/release.sh
// writes) the way a Grafana plugin catalog submission needs it: the plugin id
// as the archive's only top folder, plugin.json valid against Grafana's
// plugin.json schema, module.js, LICENSE, README.md and CHANGELOG.md, one
// backend executable per platform named as plugin.json's "executable"
// expects and built for that platform, and a sha256 checksum file beside it.
package release

import (
	"archive/zip"
	"bufio"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Platforms are the os/arch pairs a release carries a backend executable
// for: those the plugin SDK's `mage -v` (build.BuildAll in
// github.com/grafana/grafana-plugin-sdk-go/build) builds. scripts/release.sh
// lists the same pairs (TestReleaseScriptPlatforms).
var Platforms = []string{"linux/amd64", "linux/arm64", "linux/arm", "darwin/amd64", "darwin/arm64", "windows/amd64"}

// RequiredFiles are the files, relative to the archive's top folder, every
// release must contain besides plugin.json's executables and the files
// plugin.json itself references.
var RequiredFiles = []string{"plugin.json", "module.js", "LICENSE", "README.md", "CHANGELOG.md"}

// ExecutableName is the file name Grafana looks for when it starts a backend
// plugin whose plugin.json "executable" is exe on goos/goarch:
// <exe>_<goos>_<goarch>, with ".exe" on Windows.
func ExecutableName(exe, goos, goarch string) string {
	name := exe + "_" + goos + "_" + goarch
	if goos == "windows" {
		name += ".exe"
	}
	return name
}

// ChecksumName is the name of the checksum file beside an archive: the
// archive's name with ".sha256" appended. Its content is one line in
// sha256sum's format, "<64 hex digits>  <archive's base name>", so
// `sha256sum -c` verifies it.
func ChecksumName(archive string) string { return archive + ".sha256" }

// SchemaValidator validates plugin.json documents against a JSON schema.
type SchemaValidator struct{ schema *jsonschema.Schema }

// NewSchemaValidator compiles the JSON schema in schemaJSON (such as
// Grafana's plugin.schema.json), asserting its "format" keywords.
func NewSchemaValidator(schemaJSON []byte) (*SchemaValidator, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return nil, fmt.Errorf("plugin.json schema: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	const url = "https://grafana.com/plugin-metadata"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("plugin.json schema: %v", err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("plugin.json schema: %v", err)
	}
	return &SchemaValidator{schema: s}, nil
}

// Validate reports why pluginJSON does not satisfy the schema, or nil.
func (v *SchemaValidator) Validate(pluginJSON []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(pluginJSON))
	if err != nil {
		return fmt.Errorf("plugin.json is not JSON: %v", err)
	}
	if err := v.schema.Validate(inst); err != nil {
		return fmt.Errorf("plugin.json does not satisfy Grafana's plugin.json schema: %v", err)
	}
	return nil
}

// pluginMeta is the part of plugin.json the archive check reads.
type pluginMeta struct {
	ID         string `json:"id"`
	Backend    bool   `json:"backend"`
	Executable string `json:"executable"`
	Info       struct {
		Version string `json:"version"`
		Logos   struct {
			Small string `json:"small"`
			Large string `json:"large"`
		} `json:"logos"`
		Screenshots []struct {
			Path string `json:"path"`
		} `json:"screenshots"`
	} `json:"info"`
	Includes []struct {
		Path string `json:"path"`
	} `json:"includes"`
}

// mdLink is a Markdown link or image target, as Grafana's plugin validator
// reads links from a README ([text](target), ![alt](target)).
var mdLink = regexp.MustCompile(`\[.+?\]\((.+?)\)`)

// CheckReadme reports what the Grafana plugin catalog would object to in a
// plugin's README.md: a first line that is an HTML comment (the catalog
// shows no title then) and links that are relative (they resolve nowhere on
// the catalog's page); in-page anchors (#…) and mailto: are allowed.
func CheckReadme(readme []byte) []error {
	var errs []error
	first, _, _ := strings.Cut(strings.TrimLeft(string(readme), "\ufeff \t\r\n"), "\n")
	if strings.HasPrefix(strings.TrimSpace(first), "<!--") {
		errs = append(errs, fmt.Errorf("README.md: the first line is an HTML comment (%q); start with the title", strings.TrimSpace(first)))
	}
	for _, m := range mdLink.FindAllSubmatch(readme, -1) {
		target := strings.Fields(string(m[1]))
		if len(target) == 0 {
			continue
		}
		t := target[0]
		if strings.HasPrefix(t, "#") || strings.HasPrefix(t, "mailto:") || strings.HasPrefix(t, "https://") || strings.HasPrefix(t, "http://") {
			continue
		}
		errs = append(errs, fmt.Errorf("README.md: relative link %q resolves nowhere on the plugin catalog's page", t))
	}
	return errs
}

// binaryPlatform reports the os/arch an executable was built for, read from
// its ELF, Mach-O or PE header.
func binaryPlatform(b []byte) (string, error) {
	r := bytes.NewReader(b)
	if f, err := elf.NewFile(r); err == nil {
		switch f.Machine {
		case elf.EM_X86_64:
			return "linux/amd64", nil
		case elf.EM_AARCH64:
			return "linux/arm64", nil
		case elf.EM_ARM:
			return "linux/arm", nil
		}
		return "", fmt.Errorf("ELF for machine %v", f.Machine)
	}
	if f, err := macho.NewFile(r); err == nil {
		switch f.Cpu {
		case macho.CpuAmd64:
			return "darwin/amd64", nil
		case macho.CpuArm64:
			return "darwin/arm64", nil
		}
		return "", fmt.Errorf("Mach-O for CPU %v", f.Cpu)
	}
	if f, err := pe.NewFile(r); err == nil {
		switch f.Machine {
		case pe.IMAGE_FILE_MACHINE_AMD64:
			return "windows/amd64", nil
		case pe.IMAGE_FILE_MACHINE_ARM64:
			return "windows/arm64", nil
		}
		return "", fmt.Errorf("PE for machine %#x", f.Machine)
	}
	return "", errors.New("neither an ELF, a Mach-O nor a PE executable")
}

// CheckArchive checks the release archive at archivePath for the given
// platforms (os/arch pairs) and returns every problem found, or nil: the
// layout (one top folder named as plugin.json's id, RequiredFiles, every
// file plugin.json references, an executable per platform built for that
// platform and, outside Windows, with its executable bits set), plugin.json
// against the schema (with no %VERSION% or %TODAY% left and the version the
// archive's name carries, if its name is <id>-<version>.zip), the README
// (CheckReadme) and the checksum file beside it (ChecksumName).
func CheckArchive(archivePath string, platforms []string, schema *SchemaValidator) []error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	data, err := os.ReadFile(archivePath) // #nosec G703 -- the archive the release check was asked to read, named by its operator
	if err != nil {
		return []error{err}
	}
	errs = append(errs, checkChecksum(archivePath, data)...)

	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return append(errs, fmt.Errorf("%s is not a zip archive: %v", archivePath, err))
	}
	tops := map[string]bool{}
	files := map[string]*zip.File{}
	for _, f := range zr.File {
		name := f.Name
		if strings.HasPrefix(name, "/") || strings.Contains(name, "\\") || path.Clean(name) != strings.TrimSuffix(name, "/") || strings.HasPrefix(path.Clean(name), "..") {
			fail("entry %q: not a clean relative path", name)
			continue
		}
		top, rest, _ := strings.Cut(name, "/")
		tops[top] = true
		if rest != "" && !f.FileInfo().IsDir() {
			files[rest] = f
		}
	}
	if len(tops) != 1 {
		names := make([]string, 0, len(tops))
		for t := range tops {
			names = append(names, t)
		}
		fail("the archive has %d top-level entries %v; it must have one folder, the plugin id", len(tops), names)
	}
	read := func(name string) ([]byte, bool) {
		f, ok := files[name]
		if !ok {
			return nil, false
		}
		rc, err := f.Open()
		if err != nil {
			fail("%s: %v", name, err)
			return nil, false
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			fail("%s: %v", name, err)
			return nil, false
		}
		return b, true
	}
	for _, name := range RequiredFiles {
		if f, ok := files[name]; !ok {
			fail("%s is missing", name)
		} else if f.UncompressedSize64 == 0 {
			fail("%s is empty", name)
		}
	}
	if readme, ok := read("README.md"); ok {
		errs = append(errs, CheckReadme(readme)...)
	}
	pj, ok := read("plugin.json")
	if !ok {
		return errs
	}
	if schema != nil {
		checked, err := withoutBuildMode(pj)
		if err != nil {
			errs = append(errs, err)
		} else if err := schema.Validate(checked); err != nil {
			errs = append(errs, err)
		}
	}
	if bytes.Contains(pj, []byte("%VERSION%")) || bytes.Contains(pj, []byte("%TODAY%")) {
		fail("plugin.json still has a %%VERSION%% or %%TODAY%% placeholder: it was not built by npm run build")
	}
	var meta pluginMeta
	if err := json.Unmarshal(pj, &meta); err != nil {
		return append(errs, fmt.Errorf("plugin.json: %v", err))
	}
	if len(tops) == 1 && !tops[meta.ID] {
		for t := range tops {
			fail("the top folder is %q, not the plugin id %q", t, meta.ID)
		}
	}
	base := path.Base(strings.ReplaceAll(archivePath, "\\", "/"))
	if v, ok := strings.CutPrefix(strings.TrimSuffix(base, ".zip"), meta.ID+"-"); ok && v != meta.Info.Version {
		fail("the archive's name says version %q, plugin.json says %q", v, meta.Info.Version)
	}
	refs := []string{meta.Info.Logos.Small, meta.Info.Logos.Large}
	for _, s := range meta.Info.Screenshots {
		refs = append(refs, s.Path)
	}
	for _, inc := range meta.Includes {
		refs = append(refs, inc.Path)
	}
	for _, r := range refs {
		if r == "" {
			continue
		}
		if _, ok := files[path.Clean(r)]; !ok {
			fail("plugin.json references %s, which the archive lacks", r)
		}
	}
	if !meta.Backend {
		return errs
	}
	if meta.Executable == "" {
		return append(errs, errors.New("plugin.json: a backend plugin needs \"executable\""))
	}
	for _, p := range platforms {
		goos, goarch, ok := strings.Cut(p, "/")
		if !ok {
			fail("platform %q is not os/arch", p)
			continue
		}
		name := ExecutableName(meta.Executable, goos, goarch)
		f, ok := files[name]
		if !ok {
			fail("%s (the executable for %s) is missing", name, p)
			continue
		}
		if goos != "windows" && f.Mode().Perm()&0o111 == 0 {
			fail("%s is not executable (mode %v)", name, f.Mode())
		}
		b, ok := read(name)
		if !ok {
			continue
		}
		got, err := binaryPlatform(b)
		if err != nil {
			fail("%s: %v", name, err)
		} else if got != p {
			fail("%s is built for %s, not %s", name, got, p)
		}
	}
	return errs
}

// withoutBuildMode returns plugin.json without its "buildMode" field, or an
// error if that field is not "production". @grafana/create-plugin's webpack
// configuration (.config/webpack/BuildModeWebpackPlugin.ts) writes
// "buildMode" (the webpack mode) into dist/plugin.json; the revision of
// Grafana's schema kept in testdata predates that field and forbids unknown
// top-level fields, so the rest is validated against it and buildMode here.
func withoutBuildMode(pj []byte) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(pj, &m); err != nil {
		return nil, fmt.Errorf("plugin.json: %v", err)
	}
	raw, ok := m["buildMode"]
	if !ok {
		return pj, nil
	}
	var mode string
	if err := json.Unmarshal(raw, &mode); err != nil || mode != "production" {
		return nil, fmt.Errorf("plugin.json: buildMode is %s, not \"production\": the front end was not built by npm run build", raw)
	}
	delete(m, "buildMode")
	return json.Marshal(m)
}

// checkChecksum compares the checksum file beside the archive with the
// archive's SHA-256.
func checkChecksum(archivePath string, data []byte) []error {
	sumPath := ChecksumName(archivePath)
	b, err := os.ReadFile(sumPath) // #nosec G703 -- the checksum file beside the archive the operator named
	if err != nil {
		return []error{fmt.Errorf("checksum file: %v", err)}
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	if !sc.Scan() {
		return []error{fmt.Errorf("%s is empty", sumPath)}
	}
	fields := strings.Fields(sc.Text())
	if len(fields) != 2 {
		return []error{fmt.Errorf("%s: want \"<sha256>  <archive name>\", got %q", sumPath, sc.Text())}
	}
	var errs []error
	sum := sha256.Sum256(data)
	if want := hex.EncodeToString(sum[:]); !strings.EqualFold(fields[0], want) {
		errs = append(errs, fmt.Errorf("%s says %s, the archive's SHA-256 is %s", sumPath, fields[0], want))
	}
	if name := strings.TrimPrefix(fields[1], "*"); name != path.Base(strings.ReplaceAll(archivePath, "\\", "/")) {
		errs = append(errs, fmt.Errorf("%s names %q, not the archive %q", sumPath, name, path.Base(archivePath)))
	}
	return errs
}
