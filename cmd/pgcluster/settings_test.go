package main

import (
	"flag"
	"io"
	"maps"
	"testing"
)

func TestSetFlagPassesServerSettingsAndOverridesTheDefaults(t *testing.T) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	settings := serverSettings{}
	fs.Var(settings, "set", "")
	if err := fs.Parse([]string{"-set", "shared_preload_libraries=pg_stat_statements", "-set", "max_connections=50", "-set", "log_line_prefix=%m a=b"}); err != nil {
		t.Fatal(err)
	}
	got := settings.with("max_connections", "300")
	want := map[string]string{
		"shared_preload_libraries": "pg_stat_statements",
		"max_connections":          "50",
		"log_line_prefix":          "%m a=b",
	}
	if !maps.Equal(got, want) {
		t.Fatalf("settings %v, want %v", got, want)
	}
	if got := (serverSettings{}).with("max_connections", "300"); !maps.Equal(got, map[string]string{"max_connections": "300"}) {
		t.Fatalf("defaults %v", got)
	}
	for _, bad := range []string{"no-equals", "=value"} {
		if err := fs.Parse([]string{"-set", bad}); err == nil {
			t.Errorf("-set %q accepted", bad)
		}
	}
}
