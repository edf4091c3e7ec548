package report

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// Machine is what a run ran on.
type Machine struct {
	Host      string `json:"host"`
	CPU       string `json:"cpu"`
	CPUs      int    `json:"cpus"`
	Memory    string `json:"memory"`
	Kernel    string `json:"kernel"`
	GoVersion string `json:"go"`
	// Dir is the benchmark's directory and FS the file system it is on.
	Dir string `json:"dir,omitempty"`
	FS  string `json:"fs,omitempty"`
	// LoadStart and LoadEnd are /proc/loadavg's 1, 5 and 15-minute load
	// averages when the run began and ended: other work on the machine.
	LoadStart string `json:"load_start"`
	LoadEnd   string `json:"load_end,omitempty"`
}

// Probe reads the machine's description, with dir's file system when dir
// is not empty. Fields it cannot read stay empty.
func Probe(dir string) Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), Dir: dir, LoadStart: LoadAverage()}
	m.Host, _ = os.Hostname()
	m.CPU = procField("/proc/cpuinfo", "model name")
	if kb := procField("/proc/meminfo", "MemTotal"); kb != "" {
		var n int64
		if _, err := fmt.Sscanf(kb, "%d kB", &n); err == nil {
			m.Memory = fmt.Sprintf("%.1f GiB", float64(n)/(1<<20))
		}
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		m.Kernel = unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:])
	}
	if dir != "" {
		m.FS = fsType(dir)
	}
	return m
}

// LoadAverage returns /proc/loadavg's first three fields ("" if unreadable).
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// procField returns the value of the first "key : value" line of path.
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// fsType names the file system dir is on.
func fsType(dir string) string {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return ""
	}
	names := map[int64]string{
		unix.EXT4_SUPER_MAGIC: "ext4", unix.TMPFS_MAGIC: "tmpfs", unix.XFS_SUPER_MAGIC: "xfs",
		unix.BTRFS_SUPER_MAGIC: "btrfs", unix.OVERLAYFS_SUPER_MAGIC: "overlayfs", unix.NFS_SUPER_MAGIC: "nfs",
	}
	if n, ok := names[int64(st.Type)]; ok {
		return n
	}
	return fmt.Sprintf("0x%x", st.Type)
}

// Rows lists the machine for the page.
func (m Machine) Rows() []KV {
	rows := []KV{{"host", m.Host}, {"cpu", m.CPU}, {"cpus", fmt.Sprint(m.CPUs)}, {"memory", m.Memory}, {"kernel", m.Kernel}, {"go", m.GoVersion}}
	if m.Dir != "" {
		rows = append(rows, KV{"directory", m.Dir + " (" + m.FS + ")"})
	}
	rows = append(rows, KV{"load average at start (1, 5, 15 min)", m.LoadStart})
	if m.LoadEnd != "" {
		rows = append(rows, KV{"load average at end", m.LoadEnd})
	}
	return rows
}
