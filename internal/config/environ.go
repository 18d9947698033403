package config

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// SecretVars names the variables that hold key material or credentials,
// or may (a URL's password): those of the fields LogValue masks (log tag
// secret, url or count), and WebSearchKeyVar.
func SecretVars() []string {
	var names []string
	for _, f := range envFields() {
		if f.log != "" && f.log != logDerived {
			names = append(names, envPrefix+f.name)
		}
	}
	return append(names, WebSearchKeyVar)
}

// HideSecrets takes the SecretVars out of this process's environment once
// the caller has its copy (os.Environ): a library that starts a process
// with the inherited environment passes none of them on, and
// /proc/<pid>/environ, which another process of the same user can read,
// no longer shows them. The first step (os.Unsetenv) always happens;
// the second overwrites the values in the environment block the kernel
// reports (through /proc/self/mem, Linux only), and its error says why it
// could not.
func HideSecrets() error {
	names := SecretVars()
	for _, n := range names {
		_ = os.Unsetenv(n)
	}
	return scrubEnvironBlock(names)
}

// scrubEnvironBlock overwrites with NUL bytes the values of names in the
// environment block the process started with (what /proc/self/environ
// shows: the memory between env_start and env_end of /proc/self/stat).
// Go copied the environment at start, so nothing reads that block again.
func scrubEnvironBlock(names []string) error {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return fmt.Errorf("read /proc/self/stat: %w", err)
	}
	// Fields after the command name (which may hold spaces and
	// parentheses) start at field 3; env_start and env_end are 50 and 51.
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return fmt.Errorf("parse /proc/self/stat")
	}
	fields := strings.Fields(string(stat[end+1:]))
	if len(fields) < 49 {
		return fmt.Errorf("/proc/self/stat has no environment addresses")
	}
	start, err1 := strconv.ParseInt(fields[47], 10, 64)
	stop, err2 := strconv.ParseInt(fields[48], 10, 64)
	if err1 != nil || err2 != nil || start <= 0 || stop <= start || stop-start > 1<<24 {
		return fmt.Errorf("/proc/self/stat has no usable environment addresses")
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("open /proc/self/mem: %w", err)
	}
	defer mem.Close()
	block := make([]byte, stop-start)
	if _, err := mem.ReadAt(block, start); err != nil {
		return fmt.Errorf("read the environment block: %w", err)
	}
	changed := false
	for off := 0; off < len(block); {
		n := bytes.IndexByte(block[off:], 0)
		if n < 0 {
			n = len(block) - off
		}
		entry := block[off : off+n]
		for _, name := range names {
			if bytes.HasPrefix(entry, []byte(name+"=")) {
				clear(entry[len(name)+1:])
				changed = true
			}
		}
		off += n + 1
	}
	if !changed {
		return nil
	}
	if _, err := mem.WriteAt(block, start); err != nil {
		return fmt.Errorf("overwrite the environment block: %w", err)
	}
	return nil
}
