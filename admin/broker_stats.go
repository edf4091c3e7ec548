package admin

import (
	"net/http"
	"runtime"

	"github.com/magnetar-mq/magnetar/auth"
	"github.com/magnetar-mq/magnetar/httpapi"
)

// /admin/v2/broker-stats/mbeans and /allocator-stats/{allocator}: Pulsar
// answers them with the JVM's MBeans and Netty's pooled allocator; a Go
// process has neither, so both answer Pulsar's shapes filled with the Go
// runtime's equivalents (runtime.MemStats, the goroutine count), as
// docs/broker-stats.md lists. Superuser only, as in Pulsar.

// metricsEntry is Pulsar's Metrics: values by name and the dimensions
// that say what they measure.
type metricsEntry struct {
	Metrics    map[string]any    `json:"metrics"`
	Dimensions map[string]string `json:"dimensions"`
}

// poolArenaStats, poolSubpageStats, poolChunkListStats, poolChunkStats
// and allocatorStats are Pulsar's AllocatorStats shapes.
type poolSubpageStats struct {
	MaxNumElements uint64 `json:"maxNumElements"`
	NumAvailable   uint64 `json:"numAvailable"`
	ElementSize    uint32 `json:"elementSize"`
	PageSize       int    `json:"pageSize"`
}

type poolChunkStats struct {
	Usage     int    `json:"usage"`
	ChunkSize uint64 `json:"chunkSize"`
	FreeBytes uint64 `json:"freeBytes"`
}

type poolChunkListStats struct {
	MinUsage int              `json:"minUsage"`
	MaxUsage int              `json:"maxUsage"`
	Chunks   []poolChunkStats `json:"chunks"`
}

type poolArenaStats struct {
	NumTinySubpages            int                  `json:"numTinySubpages"`
	NumSmallSubpages           int                  `json:"numSmallSubpages"`
	NumChunkLists              int                  `json:"numChunkLists"`
	TinySubpages               []poolSubpageStats   `json:"tinySubpages"`
	SmallSubpages              []poolSubpageStats   `json:"smallSubpages"`
	ChunkLists                 []poolChunkListStats `json:"chunkLists"`
	NumAllocations             uint64               `json:"numAllocations"`
	NumTinyAllocations         uint64               `json:"numTinyAllocations"`
	NumSmallAllocations        uint64               `json:"numSmallAllocations"`
	NumNormalAllocations       uint64               `json:"numNormalAllocations"`
	NumHugeAllocations         uint64               `json:"numHugeAllocations"`
	NumDeallocations           uint64               `json:"numDeallocations"`
	NumTinyDeallocations       uint64               `json:"numTinyDeallocations"`
	NumSmallDeallocations      uint64               `json:"numSmallDeallocations"`
	NumNormalDeallocations     uint64               `json:"numNormalDeallocations"`
	NumHugeDeallocations       uint64               `json:"numHugeDeallocations"`
	NumActiveAllocations       uint64               `json:"numActiveAllocations"`
	NumActiveTinyAllocations   uint64               `json:"numActiveTinyAllocations"`
	NumActiveSmallAllocations  uint64               `json:"numActiveSmallAllocations"`
	NumActiveNormalAllocations uint64               `json:"numActiveNormalAllocations"`
	NumActiveHugeAllocations   uint64               `json:"numActiveHugeAllocations"`
}

type allocatorStats struct {
	NumDirectArenas      int              `json:"numDirectArenas"`
	NumHeapArenas        int              `json:"numHeapArenas"`
	NumThreadLocalCaches int              `json:"numThreadLocalCaches"`
	NormalCacheSize      int              `json:"normalCacheSize"`
	SmallCacheSize       int              `json:"smallCacheSize"`
	TinyCacheSize        int              `json:"tinyCacheSize"`
	DirectArenas         []poolArenaStats `json:"directArenas"`
	HeapArenas           []poolArenaStats `json:"heapArenas"`
}

func (a *API) registerBrokerStatsRoutes(rt routeTable) {
	rt.Add(
		httpapi.Route{Method: "GET", Pattern: "/admin/v2/broker-stats/mbeans", Access: auth.AccessSuperUser,
			Response: []metricsEntry{}, Handler: func(w http.ResponseWriter, _ *http.Request, _ params) {
				writeJSON(w, http.StatusOK, goMBeans())
			}},
		httpapi.Route{Method: "GET", Pattern: "/admin/v2/broker-stats/allocator-stats/{allocator}", Access: auth.AccessSuperUser,
			Response: allocatorStats{}, Handler: func(w http.ResponseWriter, _ *http.Request, p params) {
				// Pulsar's two allocators; Go has one heap for both.
				if n := p["allocator"]; n != "default" && n != "ml-cache" {
					writeError(w, http.StatusNotFound, "Allocator name "+n+" not found: want default or ml-cache")
					return
				}
				writeJSON(w, http.StatusOK, goAllocatorStats())
			}},
	)
}

// goMBeans is the Go runtime as Pulsar's MBean list: memory, garbage
// collector, threading (goroutines).
func goMBeans() []metricsEntry {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	bean := func(name string, m map[string]any) metricsEntry {
		return metricsEntry{Metrics: m, Dimensions: map[string]string{"MBean": name}}
	}
	return []metricsEntry{
		bean("go.runtime:type=Memory", map[string]any{
			"HeapMemoryUsage.used": ms.HeapAlloc, "HeapMemoryUsage.committed": ms.HeapSys - ms.HeapReleased,
			"HeapMemoryUsage.max": ms.HeapSys, "HeapInuse": ms.HeapInuse, "HeapIdle": ms.HeapIdle,
			"HeapReleased": ms.HeapReleased, "StackInuse": ms.StackInuse, "Sys": ms.Sys,
			"TotalAlloc": ms.TotalAlloc, "Mallocs": ms.Mallocs, "Frees": ms.Frees, "HeapObjects": ms.HeapObjects,
		}),
		bean("go.runtime:type=GarbageCollector", map[string]any{
			"CollectionCount": ms.NumGC, "CollectionTimeNs": ms.PauseTotalNs, "LastGcUnixNano": ms.LastGC,
			"NextGC": ms.NextGC, "GCCPUFraction": ms.GCCPUFraction, "NumForcedGC": ms.NumForcedGC,
		}),
		bean("go.runtime:type=Threading", map[string]any{
			"ThreadCount": runtime.NumGoroutine(), "GOMAXPROCS": runtime.GOMAXPROCS(0), "NumCPU": runtime.NumCPU(),
		}),
	}
}

// goAllocatorStats is Go's heap as Pulsar's AllocatorStats: one heap
// arena, no direct arenas; its small subpages are Go's size classes
// (elementSize the class size, maxNumElements the objects ever
// allocated in it, numAvailable those freed again); small allocations
// are those of the size classes, huge ones the rest; one chunk list
// holds the heap as one chunk (chunkSize the heap obtained from the OS,
// freeBytes the idle part, usage in percent).
func goAllocatorStats() allocatorStats {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	arena := poolArenaStats{NumChunkLists: 1, TinySubpages: []poolSubpageStats{}, SmallSubpages: []poolSubpageStats{}}
	var smallM, smallF uint64
	for _, c := range ms.BySize {
		if c.Size == 0 {
			continue
		}
		arena.SmallSubpages = append(arena.SmallSubpages, poolSubpageStats{MaxNumElements: c.Mallocs, NumAvailable: c.Frees, ElementSize: c.Size, PageSize: 8192})
		smallM += c.Mallocs
		smallF += c.Frees
	}
	arena.NumSmallSubpages = len(arena.SmallSubpages)
	arena.NumAllocations, arena.NumDeallocations = ms.Mallocs, ms.Frees
	arena.NumSmallAllocations, arena.NumSmallDeallocations = smallM, smallF
	if ms.Mallocs > smallM {
		arena.NumHugeAllocations = ms.Mallocs - smallM
	}
	if ms.Frees > smallF {
		arena.NumHugeDeallocations = ms.Frees - smallF
	}
	arena.NumActiveAllocations = ms.Mallocs - ms.Frees
	arena.NumActiveSmallAllocations = smallM - min(smallF, smallM)
	arena.NumActiveHugeAllocations = arena.NumHugeAllocations - min(arena.NumHugeDeallocations, arena.NumHugeAllocations)
	usage := 0
	if ms.HeapSys > 0 {
		usage = int(100 * ms.HeapInuse / ms.HeapSys)
	}
	arena.ChunkLists = []poolChunkListStats{{MinUsage: 0, MaxUsage: 100,
		Chunks: []poolChunkStats{{Usage: usage, ChunkSize: ms.HeapSys, FreeBytes: ms.HeapIdle}}}}
	return allocatorStats{NumHeapArenas: 1, DirectArenas: []poolArenaStats{}, HeapArenas: []poolArenaStats{arena}}
}
