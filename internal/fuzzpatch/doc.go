// Package fuzzpatch turns a short fuzz input into a variant of a known good
// file, so that fuzz targets over whole files (entry logs, index segments)
// take inputs of a few dozen bytes instead of kilobytes.
//
// Why: when the Go fuzzer finds an input with new coverage it minimizes
// it, by default for up to 60 s, and minimizing a []byte tries on the
// order of n² candidates. With whole files as inputs (kilobytes) every new
// input cost a worker its full minute: a 3-minute run executed a few
// hundred to a few thousand inputs. A patch program of n ≤ ~40 bytes
// minimizes in well under a second.
//
// # Program format
//
//	prog[0]      mode: bit 7 set → truncate the base to len*(mode&0x7f)/128
//	             bytes (before patching); bit 6 set → append the bytes
//	             left after the patches as a raw tail
//	prog[1]      number of patches n
//	prog[2:2+3n] patches: offset (uint16, little endian, taken modulo the
//	             current length) and a byte XORed into the file there
//
// A short or empty program is valid: it patches less (the empty program
// gives the base unchanged). The base is never modified.
package fuzzpatch
