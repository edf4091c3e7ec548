package metadata

import (
	"fmt"
	"strings"
)

// ValidatePath reports whether p is a valid node path: "/" or "/" followed by
// one or more non-empty components separated by single slashes, none of them
// "." or "..", and no NUL byte. The error wraps ErrInvalidPath.
func ValidatePath(p string) error {
	if p == "/" {
		return nil
	}
	if p == "" || p[0] != '/' {
		return fmt.Errorf("%w: %q is not absolute", ErrInvalidPath, p)
	}
	if p[len(p)-1] == '/' {
		return fmt.Errorf("%w: %q has a trailing slash", ErrInvalidPath, p)
	}
	if strings.IndexByte(p, 0) >= 0 {
		return fmt.Errorf("%w: %q contains a NUL byte", ErrInvalidPath, p)
	}
	for rest := p[1:]; ; {
		i := strings.IndexByte(rest, '/')
		comp := rest
		if i >= 0 {
			comp = rest[:i]
		}
		if comp == "" || comp == "." || comp == ".." {
			return fmt.Errorf("%w: %q has an empty, \".\" or \"..\" component", ErrInvalidPath, p)
		}
		if i < 0 {
			return nil
		}
		rest = rest[i+1:]
	}
}

// Parent returns the parent of a valid path p; the parent of "/" is "/".
func Parent(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// Base returns the last component of a valid path p ("" for "/").
func Base(p string) string {
	return p[strings.LastIndexByte(p, '/')+1:]
}

// Join returns the path of the child name of parent.
func Join(parent, name string) string {
	if parent == "/" {
		return "/" + name
	}
	return parent + "/" + name
}

// Ancestors returns the proper ancestors of a valid path p other than "/",
// outermost first: Ancestors("/a/b/c") is ["/a", "/a/b"].
func Ancestors(p string) []string {
	var out []string
	for i := 1; i < len(p); i++ {
		if p[i] == '/' {
			out = append(out, p[:i])
		}
	}
	return out
}

// SplitSequential splits the parentPrefix argument of
// Store.CreateSequential into the parent path and the name prefix of the
// child: "/q/job-" gives ("/q", "job-"), "/q/" gives ("/q", ""). The error
// wraps ErrInvalidPath.
func SplitSequential(parentPrefix string) (parent, namePrefix string, err error) {
	i := strings.LastIndexByte(parentPrefix, '/')
	if i < 0 {
		return "", "", fmt.Errorf("%w: %q is not absolute", ErrInvalidPath, parentPrefix)
	}
	parent, namePrefix = parentPrefix[:i], parentPrefix[i+1:]
	if parent == "" {
		parent = "/"
	} else if err := ValidatePath(parent); err != nil || parent == "/" {
		return "", "", fmt.Errorf("%w: bad sequential prefix %q", ErrInvalidPath, parentPrefix)
	}
	if namePrefix == "." || namePrefix == ".." || strings.IndexByte(namePrefix, 0) >= 0 {
		return "", "", fmt.Errorf("%w: bad sequential prefix %q", ErrInvalidPath, parentPrefix)
	}
	return parent, namePrefix, nil
}

// SequentialName formats the name of a sequential child: namePrefix followed
// by n as 10 zero-padded decimal digits, as ZooKeeper does.
func SequentialName(namePrefix string, n int64) string {
	return fmt.Sprintf("%s%010d", namePrefix, n)
}
