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

// The scaffold's setup makes canvas.getContext return undefined; @grafana/ui's
// measureText (used by Combobox to size its menu and MultiCombobox to fit its
// pills) needs a 2D context. Text is measured as 7 px per character.
HTMLCanvasElement.prototype.getContext = function getContext(kind) {
  if (kind !== '2d') {
    return null;
  }
  return { font: '', measureText: (text) => ({ width: String(text).length * 7 }) };
};

// jsdom lays nothing out: every element is 0 × 0. @grafana/ui's Combobox and
// MultiCombobox draw their option list with @tanstack/react-virtual, which
// renders only the rows that fit in the scroll element's clientHeight, so with
// 0 no option would exist in the DOM. Give elements a size (as a 1024 × 768
// window) so the menus render their options for the tests to pick.
Object.defineProperty(HTMLElement.prototype, 'clientHeight', { configurable: true, get: () => 768 });
Object.defineProperty(HTMLElement.prototype, 'clientWidth', { configurable: true, get: () => 1024 });
