// Command mco-clientgo-check holds an API server to the semantics client-go relies on: an
// informer that syncs by watch-list (the WatchListClient feature, no LIST request), server-side
// apply creating and updating, a 409 Conflict on an update with a stale resourceVersion, and a
// reflector that relists after a watch answers 410 Gone.
//
// It works in a namespace of its own, deletes it at the end, prints "ok <check>" per check and
// "PASS", or "FAIL <why>" and exits 1. It is built from a Kubernetes source tree (see
// docs/real-apiserver.md, "client-go"); the opt-in test `clientgo::` runs it against the fake.
//
// Usage: mco-clientgo-check --kubeconfig PATH
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

const fieldManager = "mco-clientgo-check"

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the API server to check")
	flag.Parse()
	// On by default since client-go 1.35; set so an older default cannot hide the check.
	os.Setenv("KUBE_FEATURE_WatchListClient", "true")
	if err := run(*kubeconfig); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL %v\n", err)
		os.Exit(1)
	}
	fmt.Println("PASS")
}

// requestLog keeps "METHOD URI STATUS" for every request the clients make.
type requestLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *requestLog) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, line)
}

func (l *requestLog) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

type recorder struct {
	next http.RoundTripper
	log  *requestLog
}

func (r recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	status := "error"
	if err == nil {
		status = fmt.Sprint(resp.StatusCode)
	}
	r.log.add(req.Method + " " + req.URL.RequestURI() + " " + status)
	return resp, err
}

type check struct {
	name string
	run  func(ctx context.Context, client kubernetes.Interface, ns string, log *requestLog) error
}

func run(kubeconfig string) error {
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	// JSON: client-go 1.36 writes built-in types as protobuf, which the fake reads for a few
	// kinds only (fake-apiserver/README.md, "Protobuf").
	config.ContentType = "application/json"
	log := &requestLog{}
	config.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return recorder{rt, log} }
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	ns, err := client.CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "clientgo-"}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating a namespace: %w", err)
	}
	defer client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	checks := []check{
		{"an informer syncs by watch-list", checkWatchListInformer},
		{"server-side apply creates and updates", checkApply},
		{"a stale update is 409 Conflict", checkStaleUpdate},
		{"a reflector relists after 410 Gone", checkRelistAfterGone},
	}
	for _, c := range checks {
		if err := c.run(ctx, client, ns.Name, log); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		fmt.Printf("ok %s\n", c.name)
	}
	return nil
}

func configMap(name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}
}

func checkWatchListInformer(ctx context.Context, client kubernetes.Interface, ns string, log *requestLog) error {
	cms := client.CoreV1().ConfigMaps(ns)
	for _, name := range []string{"wl-a", "wl-b"} {
		if _, err := cms.Create(ctx, configMap(name, map[string]string{"v": "1"}), metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	informer := factory.Core().V1().ConfigMaps().Informer()
	updated := make(chan string, 16)
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) { updated <- obj.(*corev1.ConfigMap).Name },
	}); err != nil {
		return err
	}
	stop := make(chan struct{})
	factory.Start(stop)
	defer func() {
		close(stop)
		factory.Shutdown()
	}()
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return errors.New("the informer never synced")
	}
	keys := informer.GetStore().ListKeys()
	for _, name := range []string{"wl-a", "wl-b"} {
		if !contains(keys, ns+"/"+name) {
			return fmt.Errorf("synced without %s: %v", name, keys)
		}
	}
	collection := "/api/v1/namespaces/" + ns + "/configmaps?"
	streamed := false
	for _, line := range log.snapshot() {
		if !strings.Contains(line, collection) {
			continue
		}
		switch {
		case strings.Contains(line, "sendInitialEvents=true") && strings.HasSuffix(line, " 200"):
			streamed = true
		case strings.HasPrefix(line, "GET ") && !strings.Contains(line, "watch=true"):
			return fmt.Errorf("the informer fell back to a LIST: %s", line)
		}
	}
	if !streamed {
		return fmt.Errorf("no watch-list request: %v", log.snapshot())
	}
	// A later change comes through the same stream.
	if _, err := cms.Update(ctx, configMap("wl-a", map[string]string{"v": "2"}), metav1.UpdateOptions{}); err != nil {
		return err
	}
	select {
	case name := <-updated:
		if name != "wl-a" {
			return fmt.Errorf("an update of %s, expected wl-a", name)
		}
	case <-ctx.Done():
		return errors.New("the informer never saw the update")
	}
	return nil
}

// checkApply: apply creates a missing object and updates it. (Field ownership, managedFields
// and apply conflicts are not checked: the fake does not serve them, as its README says.)
func checkApply(ctx context.Context, client kubernetes.Interface, ns string, _ *requestLog) error {
	cms := client.CoreV1().ConfigMaps(ns)
	for _, value := range []string{"v", "w"} {
		config := corev1ac.ConfigMap("applied", ns).WithData(map[string]string{"k": value})
		applied, err := cms.Apply(ctx, config, metav1.ApplyOptions{FieldManager: fieldManager})
		if err != nil {
			return fmt.Errorf("apply k=%s: %w", value, err)
		}
		if applied.Data["k"] != value {
			return fmt.Errorf("apply k=%s left %v", value, applied.Data)
		}
	}
	got, err := cms.Get(ctx, "applied", metav1.GetOptions{})
	if err != nil {
		return err
	}
	if got.Data["k"] != "w" {
		return fmt.Errorf("stored after apply: %v", got.Data)
	}
	return nil
}

func checkStaleUpdate(ctx context.Context, client kubernetes.Interface, ns string, _ *requestLog) error {
	cms := client.CoreV1().ConfigMaps(ns)
	created, err := cms.Create(ctx, configMap("stale", map[string]string{"k": "1"}), metav1.CreateOptions{})
	if err != nil {
		return err
	}
	fresh := created.DeepCopy()
	fresh.Data["k"] = "2"
	if _, err := cms.Update(ctx, fresh, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("an update at the current resourceVersion: %w", err)
	}
	stale := created.DeepCopy()
	stale.Data["k"] = "3"
	_, err = cms.Update(ctx, stale, metav1.UpdateOptions{})
	if !apierrors.IsConflict(err) {
		return fmt.Errorf("expected 409 Conflict, got %v", err)
	}
	return nil
}

// relistWatcher lists and watches ConfigMaps, recording each list's resourceVersion; its first
// watch asks for resourceVersion 1, long gone on any server. It opts out of watch-list, so the
// reflector syncs by LIST and shows its relist (from the version its last list had: a 410 on a
// watch does not make client-go give that up).
type relistWatcher struct {
	cache.ListWatch
	mu     sync.Mutex
	lists  []string
	forced bool
}

func (*relistWatcher) IsWatchListSemanticsUnSupported() bool { return true }

func newRelistWatcher(client kubernetes.Interface, ns string) *relistWatcher {
	w := &relistWatcher{}
	w.ListWithContextFunc = func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		w.mu.Lock()
		w.lists = append(w.lists, opts.ResourceVersion)
		w.mu.Unlock()
		return client.CoreV1().ConfigMaps(ns).List(ctx, opts)
	}
	w.WatchFuncWithContext = func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		w.mu.Lock()
		if !w.forced {
			w.forced = true
			opts.ResourceVersion = "1"
		}
		w.mu.Unlock()
		return client.CoreV1().ConfigMaps(ns).Watch(ctx, opts)
	}
	return w
}

func checkRelistAfterGone(ctx context.Context, client kubernetes.Interface, ns string, log *requestLog) error {
	lw := newRelistWatcher(client, ns)
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	reflector := cache.NewReflectorWithOptions(lw, &corev1.ConfigMap{}, store, cache.ReflectorOptions{Name: "relist-check"})
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	go reflector.RunWithContext(rctx)
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, configMap("after-gone", nil), metav1.CreateOptions{}); err != nil {
		return err
	}
	var lists []string
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
		lw.mu.Lock()
		lists = append([]string(nil), lw.lists...)
		lw.mu.Unlock()
		_, exists, _ := store.GetByKey(ns + "/after-gone")
		return len(lists) >= 2 && exists, nil
	})
	if err != nil {
		return fmt.Errorf("no relist with the new object (lists at %q); requests: %v", lists, log.snapshot())
	}
	gone := false
	for _, line := range log.snapshot() {
		gone = gone || (strings.Contains(line, "/namespaces/"+ns+"/configmaps?") && strings.Contains(line, "resourceVersion=1&"))
	}
	if !gone {
		return errors.New("the watch from resourceVersion 1 was never sent")
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
