package zkserver

import (
	"os/exec"
	"syscall"
)

// killWithParent makes the kernel kill the JVM if the test process dies
// without running its cleanups (a test timeout panics, a SIGKILL).
func killWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
