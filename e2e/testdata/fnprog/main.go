// Command fnprog is the test function for the functions end-to-end tests,
// built with go build and uploaded to the worker. userConfig "mode"
// selects its behaviour:
//
//	wordcount  counts each word of the input in state; outputs the words
//	exclaim    outputs input + userConfig "suffix" (default "!"), after
//	           userConfig "sleepMs" milliseconds
//	fail       fails every input containing "bad", passes the others
//	reach      counts the input in state (through the worker), then
//	           produces it to userConfig "target" with a producer of its
//	           own; outputs "INPUT reached" or "INPUT refused: ERROR"
package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/magnetar-mq/magnetar/functions/sdk"
	"github.com/magnetar-mq/magnetar/pulsarclient"
)

// version is set with -ldflags "-X main.version=..." to tell builds apart.
var version = "1"

func main() {
	sdk.Run(func(ctx *sdk.Context, in []byte) ([]byte, error) {
		mode, _ := ctx.UserConfigValue("mode").(string)
		switch mode {
		case "wordcount":
			words := strings.Fields(strings.ToLower(string(in)))
			for _, w := range words {
				if _, err := ctx.IncrCounter(w, 1); err != nil {
					return nil, err
				}
			}
			ctx.RecordMetric("words", float64(len(words)))
			return []byte(strings.Join(words, ",")), nil
		case "reach":
			if _, err := ctx.IncrCounter("reached", 1); err != nil {
				return nil, err
			}
			target, _ := ctx.UserConfigValue("target").(string)
			p, err := ctx.Instance().Client.CreateProducer(pulsarclient.ProducerOptions{Topic: target, SendTimeout: 10 * time.Second})
			if err == nil {
				defer p.Close()
				_, err = p.Send(ctx.Context(), &pulsarclient.ProducerMessage{Payload: in})
			}
			if err != nil {
				return []byte(fmt.Sprintf("%s refused: %v", in, err)), nil
			}
			return []byte(string(in) + " reached"), nil
		case "fail":
			if strings.Contains(string(in), "bad") {
				return nil, errors.New("refusing " + string(in))
			}
			return in, nil
		default:
			suffix, ok := ctx.UserConfigValue("suffix").(string)
			if !ok {
				suffix = "!"
			}
			out := string(in) + suffix
			if version != "1" {
				out = fmt.Sprintf("v%s:%s", version, out)
			}
			if ms, ok := ctx.UserConfigValue("sleepMs").(float64); ok {
				time.Sleep(time.Duration(ms) * time.Millisecond)
			}
			if ctx.UserConfigValue("tagInstance") == true {
				ctx.Publish(ctx.OutputTopic()+"-instances", []byte(strconv.Itoa(ctx.InstanceID())), "")
			}
			return []byte(out), nil
		}
	})
}
