package policy

import (
	"reflect"
	"testing"
)

// TestSameDefaultsSeesEveryField: changing any one leaf field of Defaults
// (recursively through its structs, an element added to its slices)
// makes sameDefaults false, and two equal values are the same: a field
// added to Defaults and forgotten in sameDefaults would let the shared
// resolution cache serve topics a stale policy.
func TestSameDefaultsSeesEveryField(t *testing.T) {
	var base Defaults
	if !sameDefaults(&base, &base) {
		t.Fatal("a zero Defaults differs from itself")
	}
	n := 0
	var walk func(path string, v reflect.Value)
	walk = func(path string, v reflect.Value) {
		switch v.Kind() {
		case reflect.Struct:
			for i := range v.NumField() {
				walk(path+"."+v.Type().Field(i).Name, v.Field(i))
			}
			return
		}
		n++
		var changed Defaults
		field := reflect.ValueOf(&changed).Elem().FieldByIndex(fieldIndex(t, path))
		switch field.Kind() {
		case reflect.Bool:
			field.SetBool(true)
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			field.SetInt(7)
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			field.SetUint(7)
		case reflect.Float64, reflect.Float32:
			field.SetFloat(0.5)
		case reflect.String:
			field.SetString("x")
		case reflect.Slice:
			field.Set(reflect.Append(field, reflect.Zero(field.Type().Elem())))
		default:
			t.Fatalf("%s: kind %s not handled by this test", path, field.Kind())
		}
		if sameDefaults(&base, &changed) {
			t.Errorf("sameDefaults does not see Defaults%s", path)
		}
		if !sameDefaults(&changed, &changed) {
			t.Errorf("Defaults with%s changed differs from itself", path)
		}
	}
	walk("", reflect.ValueOf(base))
	if n < 20 {
		t.Fatalf("walked %d fields, want Defaults' leaves", n)
	}
}

// fieldIndex is the index path of a ".A.B" field path of Defaults.
func fieldIndex(t *testing.T, path string) []int {
	t.Helper()
	var idx []int
	typ := reflect.TypeFor[Defaults]()
	for _, name := range splitPath(path) {
		f, ok := typ.FieldByName(name)
		if !ok {
			t.Fatalf("no field %s in %s", name, typ)
		}
		idx = append(idx, f.Index...)
		typ = f.Type
	}
	return idx
}

func splitPath(path string) []string {
	var out []string
	start := 1
	for i := 1; i <= len(path); i++ {
		if i == len(path) || path[i] == '.' {
			out = append(out, path[start:i])
			start = i + 1
		}
	}
	return out
}
