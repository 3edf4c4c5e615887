// @grafana/ui's ES modules (.mjs) import react-custom-scrollbars-2 (CommonJS) by its default
// export; esbuild gives .mjs importers Node's semantics (default = module.exports), so the
// panel renderer's bundle aliases the package to this shim, which hands over the component.
const m = require('../../node_modules/react-custom-scrollbars-2/lib/index.js');
module.exports = m.default || m.Scrollbars;
module.exports.default = module.exports;
module.exports.Scrollbars = module.exports;
