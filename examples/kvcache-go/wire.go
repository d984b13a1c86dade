package main

// Reading request fields exactly, and writing doubles exactly (PROTO-3, PROTO-16, PROTO-19).
//
// A request is decoded into map[string]json.RawMessage and each field is then read from its own
// JSON text. Decoding into interface{} would turn every number into a float64 and merge hash ids
// above 2^53; decoding into json.Number would also accept the JSON string "12" as a number; and
// decoding into an int64 field would read null, or a missing field, as 0. Reading the text
// avoids all three: an integer is a JSON integer literal, parsed by strconv in 64 bits.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

type fields map[string]json.RawMessage

// wrongShape is a request that does not match its schema: it gets an error reply (PROTO-14).
type wrongShape struct{ msg string }

func (e wrongShape) Error() string { return "PROTO-16: " + e.msg }

func shapeError(format string, args ...interface{}) error {
	return wrongShape{fmt.Sprintf(format, args...)}
}

// kind is what JSON value the text is: its first byte tells (the text is valid JSON).
func kind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "missing"
	}
	switch c := raw[0]; {
	case c == '"':
		return "string"
	case c == '[':
		return "array"
	case c == '{':
		return "object"
	case c == 't' || c == 'f':
		return "boolean"
	case c == 'n':
		return "null"
	case bytes.ContainsAny(raw, ".eE"):
		return "fraction"
	default:
		return "integer"
	}
}

// asInt reads a JSON integer literal (never 3.0 or 1e3, PROTO-3) in [lo, hi].
func asInt(raw json.RawMessage, lo, hi int64) (int64, bool) {
	if kind(raw) != "integer" {
		return 0, false
	}
	v, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
	return v, err == nil && lo <= v && v <= hi
}

// asKey reads a JSON integer literal in [0, 2^64 - 1] (BEN-KEY-1, PROTO-19).
func asKey(raw json.RawMessage) (uint64, bool) {
	if kind(raw) != "integer" {
		return 0, false
	}
	text := string(bytes.TrimSpace(raw))
	if text == "-0" {
		return 0, true
	}
	v, err := strconv.ParseUint(text, 10, 64) // refuses a sign, so any negative key
	return v, err == nil
}

// asDouble reads a double as PROTO-19 writes it: a JSON number, or "NaN", "Infinity" or
// "-Infinity". strconv.ParseFloat rounds correctly, as Python's float() does; a number too large
// for a double (1e400) is a wrong shape, not an infinity.
func asDouble(raw json.RawMessage) (float64, bool) {
	switch kind(raw) {
	case "integer", "fraction":
		v, err := strconv.ParseFloat(string(bytes.TrimSpace(raw)), 64)
		return v, err == nil
	case "string":
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return 0, false
		}
		switch s {
		case "NaN":
			return math.NaN(), true
		case "Infinity":
			return math.Inf(1), true
		case "-Infinity":
			return math.Inf(-1), true
		}
	}
	return 0, false
}

func asArray(raw json.RawMessage) ([]json.RawMessage, bool) {
	var items []json.RawMessage
	if kind(raw) != "array" || json.Unmarshal(raw, &items) != nil {
		return nil, false
	}
	return items, true
}

func asObject(raw json.RawMessage) (fields, bool) {
	var obj fields
	if kind(raw) != "object" || json.Unmarshal(raw, &obj) != nil {
		return nil, false
	}
	return obj, true
}

func asString(raw json.RawMessage) (string, bool) {
	var s string
	if kind(raw) != "string" || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// The field readers below return a wrongShape error naming the field.

func (f fields) count(name string, lo int64) (int64, error) {
	v, ok := asInt(f[name], lo, math.MaxInt64)
	if !ok {
		return 0, shapeError("%s must be an integer in [%d, 2^63 - 1], not %s", name, lo, shown(f[name]))
	}
	return v, nil
}

func (f fields) key(name string) (uint64, error) {
	v, ok := asKey(f[name])
	if !ok {
		return 0, shapeError("%s must be an integer in [0, 2^64 - 1], not %s", name, shown(f[name]))
	}
	return v, nil
}

func (f fields) double(name string) (float64, error) {
	v, ok := asDouble(f[name])
	if !ok {
		return 0, shapeError(`%s must be a double (a JSON number, "NaN", "Infinity" or "-Infinity"), not %s`, name, shown(f[name]))
	}
	return v, nil
}

func (f fields) object(name string) (fields, error) {
	v, ok := asObject(f[name])
	if !ok {
		return nil, shapeError("%s must be an object, not %s", name, shown(f[name]))
	}
	return v, nil
}

// hashIDs reads a non-empty array of signed 64-bit hash ids (PROTO-3, REPLAY-TRACE-2), all of
// them before any is used, so that a bad id changes nothing.
func (f fields) hashIDs(name string) ([]int64, error) {
	items, ok := asArray(f[name])
	if !ok || len(items) == 0 {
		return nil, shapeError("%s must be a non-empty array of integers, not %s", name, shown(f[name]))
	}
	ids := make([]int64, len(items))
	for i, item := range items {
		if ids[i], ok = asInt(item, math.MinInt64, math.MaxInt64); !ok {
			return nil, shapeError("%s[%d] must be an integer in [-2^63, 2^63 - 1], not %s", name, i, shown(item))
		}
	}
	return ids, nil
}

// keySet reads a pinned set: an array of keys (PROTO-19).
func (f fields) keySet(name string) (map[uint64]bool, error) {
	items, ok := asArray(f[name])
	if !ok {
		return nil, shapeError("%s must be an array of keys, not %s", name, shown(f[name]))
	}
	set := make(map[uint64]bool, len(items))
	for i, item := range items {
		k, ok := asKey(item)
		if !ok {
			return nil, shapeError("%s[%d] must be an integer in [0, 2^64 - 1], not %s", name, i, shown(item))
		}
		set[k] = true
	}
	return set, nil
}

// shown is a value's JSON text for a message, cut short.
func shown(raw json.RawMessage) string {
	text := string(bytes.TrimSpace(raw))
	if text == "" {
		return "missing"
	}
	if len(text) > 60 {
		return text[:60] + "..."
	}
	return text
}

// double is a float64 that encoding/json writes as PROTO-19 says (encoding/json itself refuses
// NaN and the infinities with an error).
type double float64

func (d double) MarshalJSON() ([]byte, error) {
	return []byte(doubleText(float64(d))), nil
}

// doubleText is the JSON text of x: the shortest decimal that reads back as x, laid out as
// Python's repr lays it out (1.0, 1e+16, 1e-05), so that a reply is byte for byte the
// reference server's; any layout of the shortest digits would read back the same.
func doubleText(x float64) string {
	switch {
	case math.IsNaN(x):
		return `"NaN"`
	case math.IsInf(x, 1):
		return `"Infinity"`
	case math.IsInf(x, -1):
		return `"-Infinity"`
	case x == 0 && math.Signbit(x):
		return "-0.0"
	case x == 0:
		return "0.0"
	}
	sci := strconv.FormatFloat(x, 'e', -1, 64) // [-]d[.ddd]e±XX: the shortest digits
	sign := ""
	if sci[0] == '-' {
		sign, sci = "-", sci[1:]
	}
	mantissa, exponent, _ := strings.Cut(sci, "e")
	exp, err := strconv.Atoi(exponent)
	if err != nil {
		panic(errors.New("strconv wrote an exponent that is not a number: " + sci))
	}
	point := exp + 1 // the digits are 0.d1d2... x 10^point
	if point > 16 || point < -3 {
		return sign + sci // Python's repr switches to an exponent here, with Go's two-digit minimum
	}
	digits := strings.Replace(mantissa, ".", "", 1)
	switch {
	case point <= 0:
		return sign + "0." + strings.Repeat("0", -point) + digits
	case point >= len(digits):
		return sign + digits + strings.Repeat("0", point-len(digits)) + ".0"
	default:
		return sign + digits[:point] + "." + digits[point:]
	}
}
