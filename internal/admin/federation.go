package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/anchord/anchord/internal/federation"
	"github.com/anchord/anchord/internal/param"
)

// federationOptions are the parameters of the follow, followers and acceptlist commands.
type federationOptions struct {
	options
	Type string
}

// runFederation executes `anchord admin follow|followers|witness|witnessing|acceptlist <verb>
// [ACTOR] [params]`.
func runFederation(noun, verb string, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) int {
	o := federationOptions{options: options{Target: TargetDefault, DataDir: DataDirDefault}}
	// Actors may come before or after the parameters: take out every argument that is neither
	// a parameter nor the value of one (--json and --help take none).
	var actors, rest []string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if !strings.HasPrefix(arg, "-") {
			actors = append(actors, arg)
			continue
		}
		rest = append(rest, arg)
		name := strings.TrimLeft(arg, "-")
		if !strings.Contains(name, "=") && name != "json" && name != "help" && name != "h" && i+1 < len(args) {
			rest = append(rest, args[i+1])
			i++
		}
	}
	args = rest
	ps := append(o.commonParams(), param.Bool(&o.JSON, "json", "print JSON instead of a table"))
	if noun == "acceptlist" {
		ps = append(ps, param.String(&o.Type, "type", "accept list: follow or invite-witness"))
	}
	if err := param.Parse("admin "+noun+" "+verb, args, lookupEnv, ps, stdout); err != nil {
		if errors.Is(err, param.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "anchord admin: %v\n", err)
		return 2
	}
	c, err := o.newClient(30 * time.Second)
	if err != nil {
		fmt.Fprintf(stderr, "anchord admin: %v\n", err)
		return 1
	}
	ctx := context.Background()
	needsActor := verb == "add" || verb == "remove" || (noun == "witness" && verb == "invite")
	switch {
	case needsActor && len(actors) != 1:
		fmt.Fprintf(stderr, "anchord admin: %s %s needs exactly one actor IRI\n", noun, verb)
		return 2
	case !needsActor && verb != "list", needsActor && (noun == "followers" || noun == "witnessing"), !needsActor && len(actors) > 0:
		fmt.Fprint(stderr, usage)
		return 2
	case noun == "acceptlist" && needsActor && o.Type == "":
		fmt.Fprintf(stderr, "anchord admin: acceptlist %s needs --type follow or --type invite-witness\n", verb)
		return 2
	}
	switch noun + " " + verb {
	case "follow add":
		err = c.request(ctx, "/admin/v1/following", "following", actors[0], stdout)
	case "follow remove":
		_, err = c.do(ctx, http.MethodDelete, "/admin/v1/following?actor="+url.QueryEscape(actors[0]))
		if err == nil {
			fmt.Fprintf(stdout, "unfollowed %s\n", actors[0])
		}
	case "follow list":
		err = c.relationships(ctx, "/admin/v1/following", o.JSON, stdout, false)
	case "followers list":
		err = c.relationships(ctx, "/admin/v1/followers", o.JSON, stdout, false)
	case "witness add", "witness invite":
		err = c.request(ctx, "/admin/v1/witnesses", "invited", actors[0], stdout)
	case "witness remove":
		_, err = c.do(ctx, http.MethodDelete, "/admin/v1/witnesses?actor="+url.QueryEscape(actors[0]))
		if err == nil {
			fmt.Fprintf(stdout, "withdrew the invitation of %s\n", actors[0])
		}
	case "witness list":
		err = c.relationships(ctx, "/admin/v1/witnesses", o.JSON, stdout, true)
	case "witnessing list":
		err = c.relationships(ctx, "/admin/v1/witnessing", o.JSON, stdout, false)
	case "acceptlist add":
		err = c.acceptListChange(ctx, http.MethodPost, o.Type, actors[0], stdout)
	case "acceptlist remove":
		err = c.acceptListChange(ctx, http.MethodDelete, o.Type, actors[0], stdout)
	case "acceptlist list":
		err = c.acceptList(ctx, o.Type, o.JSON, stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "anchord admin: %v\n", err)
		return 1
	}
	return 0
}

// request posts a Follow or an Invite through the admin API and prints the relationship.
func (c *client) request(ctx context.Context, path, what, actor string, out io.Writer) error {
	body, err := c.send(ctx, http.MethodPost, path, map[string]string{"actor": actor})
	if err != nil {
		return err
	}
	var v federation.RelationshipView
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	fmt.Fprintf(out, "%s %s: %s (activity %s)\n", what, v.Actor, v.Status, v.ActivityID)
	return nil
}

// relationships prints a relationship list; faults adds the witnesses' log promise column.
func (c *client) relationships(ctx context.Context, path string, asJSON bool, out io.Writer, faults bool) error {
	body, err := c.do(ctx, http.MethodGet, path)
	if err != nil {
		return err
	}
	if asJSON {
		_, err = out.Write(body)
		return err
	}
	var list struct {
		Items []federation.RelationshipView `json:"items"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	header := "ACTOR\tSTATUS\tSINCE\tACTIVITY"
	if faults {
		header += "\tLOG PROMISES"
	}
	fmt.Fprintln(tw, header)
	for _, r := range list.Items {
		line := fmt.Sprintf("%s\t%s\t%s\t%s", r.Actor, r.Status, r.UpdatedAt.Format(time.RFC3339), r.ActivityID)
		if faults {
			promises := "-"
			if r.Faulty {
				promises = fmt.Sprintf("faulty: %d broken", r.BrokenPromises)
			}
			line += "\t" + promises
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

func (c *client) acceptListChange(ctx context.Context, method, listType, actor string, out io.Writer) error {
	var err error
	if method == http.MethodPost {
		_, err = c.send(ctx, method, "/admin/v1/acceptlist", map[string]string{"type": listType, "actor": actor})
	} else {
		_, err = c.do(ctx, method, "/admin/v1/acceptlist?type="+url.QueryEscape(listType)+"&actor="+url.QueryEscape(actor))
	}
	if err != nil {
		return err
	}
	verb := map[string]string{http.MethodPost: "added to", http.MethodDelete: "removed from"}[method]
	fmt.Fprintf(out, "%s %s the %s accept list\n", actor, verb, listType)
	return nil
}

func (c *client) acceptList(ctx context.Context, listType string, asJSON bool, out io.Writer) error {
	path := "/admin/v1/acceptlist"
	if listType != "" {
		path += "?type=" + url.QueryEscape(listType)
	}
	body, err := c.do(ctx, http.MethodGet, path)
	if err != nil {
		return err
	}
	if asJSON {
		_, err = out.Write(body)
		return err
	}
	var list struct {
		Items []federation.AcceptListView `json:"items"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TYPE\tACTOR")
	for _, e := range list.Items {
		fmt.Fprintf(tw, "%s\t%s\n", e.Type, e.Actor)
	}
	return tw.Flush()
}
