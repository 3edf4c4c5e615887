// Jest setup provided by Grafana scaffolding
import './.config/jest-setup';

// jsdom has no IntersectionObserver; the @grafana/ui Select menu creates one
// when it opens. A no-op stand-in is enough for the editors' tests.
class IntersectionObserverStub {
  observe() {}
  unobserve() {}
  disconnect() {}
  takeRecords() {
    return [];
  }
}
Object.defineProperty(global, 'IntersectionObserver', { writable: true, value: IntersectionObserverStub });
