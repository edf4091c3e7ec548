package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/magnetar-mq/magnetar/internal/version"
)

// newVersionCmd builds `magnetar version`.
func newVersionCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and Go version of this binary",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			i := version.Get()
			w := cmd.OutOrStdout()
			if asJSON {
				return json.NewEncoder(w).Encode(i)
			}
			_, err := fmt.Fprintf(w, "magnetar %s\ncommit %s\n%s\n", i.Version, i.Commit, i.GoVersion)
			return err
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}
