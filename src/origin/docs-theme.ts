/**
 * The reference page's look: Coffer's top bar (its mark, its name, a way back to the
 * Playground), type and colours over Swagger UI's stock ones. Served as files under
 * /docs/static/theme/, so the page's Content-Security-Policy needs no inline script or style.
 */

const MARK = 'M4 10h16v8.5a2.5 2.5 0 0 1-2.5 2.5h-11A2.5 2.5 0 0 1 4 18.5z M4 10l1.6-4.4A2.5 2.5 0 0 1 8 4h8a2.5 2.5 0 0 1 2.4 1.6L20 10 M10 14h4';

/** Builds the top bar with DOM calls only: nothing is parsed from markup. */
const HEADER_JS = `(function () {
  var NS = 'http://www.w3.org/2000/svg';
  function bar() {
    var header = document.createElement('header');
    header.className = 'coffer-bar';
    var brand = document.createElement('a');
    brand.className = 'coffer-brand';
    brand.href = '/';
    var mark = document.createElement('span');
    mark.className = 'coffer-mark';
    var svg = document.createElementNS(NS, 'svg');
    svg.setAttribute('viewBox', '0 0 24 24');
    svg.setAttribute('width', '20');
    svg.setAttribute('height', '20');
    svg.setAttribute('aria-hidden', 'true');
    var path = document.createElementNS(NS, 'path');
    path.setAttribute('d', ${JSON.stringify(MARK)});
    svg.appendChild(path);
    mark.appendChild(svg);
    var name = document.createElement('span');
    name.className = 'coffer-name';
    name.textContent = 'Coffer';
    brand.appendChild(mark);
    brand.appendChild(name);
    var title = document.createElement('span');
    title.className = 'coffer-title';
    title.textContent = 'API reference';
    var back = document.createElement('a');
    back.className = 'coffer-back';
    back.href = '/';
    back.textContent = 'Open the Playground';
    header.appendChild(brand);
    header.appendChild(title);
    header.appendChild(back);
    document.body.insertBefore(header, document.body.firstChild);
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', bar);
  else bar();
})();
`;

const CSS = `
:root {
  --coffer-font: system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, 'Noto Sans', sans-serif;
  --coffer-mono: ui-monospace, SFMono-Regular, Menlo, Consolas, 'Liberation Mono', monospace;
  --coffer-bg: #f4f5f8;
  --coffer-surface: #ffffff;
  --coffer-border: #e3e6ec;
  --coffer-text: #161a22;
  --coffer-text-2: #4d5565;
  --coffer-accent: #2563eb;
  color-scheme: light;
}
body { margin: 0; background: var(--coffer-bg); font-family: var(--coffer-font); color: var(--coffer-text); }
.coffer-bar {
  position: sticky; top: 0; z-index: 10;
  display: flex; align-items: center; gap: 16px;
  height: 60px; padding: 0 20px;
  background: var(--coffer-surface); border-bottom: 1px solid var(--coffer-border);
}
.coffer-brand { display: inline-flex; align-items: center; gap: 10px; color: var(--coffer-text); text-decoration: none; font-weight: 700; font-size: 18px; }
.coffer-mark {
  display: inline-grid; place-items: center; width: 34px; height: 34px; border-radius: 10px;
  background: linear-gradient(135deg, #3b82f6, #6d28d9); color: #fff; box-shadow: 0 2px 8px rgba(59, 130, 246, 0.35);
}
.coffer-mark svg { fill: none; stroke: currentColor; stroke-width: 1.8; stroke-linecap: round; stroke-linejoin: round; }
.coffer-title { color: var(--coffer-text-2); font-size: 15px; font-weight: 600; padding-left: 16px; border-left: 1px solid var(--coffer-border); }
.coffer-back { margin-left: auto; color: var(--coffer-accent); font-weight: 600; font-size: 14px; text-decoration: none; }
.coffer-back:hover, .coffer-brand:hover .coffer-name { text-decoration: underline; text-underline-offset: 2px; }
#swagger-ui { max-width: 1180px; margin: 20px auto 40px; padding: 0 20px; }
.swagger-ui { font-family: var(--coffer-font); color: var(--coffer-text); }
.swagger-ui .wrapper { padding: 0; max-width: none; }
.swagger-ui .information-container.wrapper { background: var(--coffer-surface); border: 1px solid var(--coffer-border); border-radius: 14px; padding: 4px 24px; margin-bottom: 16px; }
.swagger-ui .info { margin: 20px 0; }
.swagger-ui .info .title, .swagger-ui .opblock-tag, .swagger-ui .opblock .opblock-summary-description,
.swagger-ui .info p, .swagger-ui .info li, .swagger-ui .info table, .swagger-ui .markdown p, .swagger-ui .renderedMarkdown p,
.swagger-ui label, .swagger-ui .btn, .swagger-ui select, .swagger-ui .tab li, .swagger-ui table thead tr th, .swagger-ui table thead tr td,
.swagger-ui .parameter__name, .swagger-ui .response-col_status, .swagger-ui .model-title, .swagger-ui section.models h4 {
  font-family: var(--coffer-font); color: var(--coffer-text);
}
.swagger-ui .info .title { font-size: 28px; font-weight: 700; }
.swagger-ui .info a, .swagger-ui a.nostyle, .swagger-ui .markdown a, .swagger-ui .renderedMarkdown a { color: var(--coffer-accent); }
.swagger-ui code, .swagger-ui pre, .swagger-ui .opblock-summary-path, .swagger-ui .opblock-summary-method, .swagger-ui .model, .swagger-ui .prop-type {
  font-family: var(--coffer-mono);
}
.swagger-ui .opblock-tag-section { background: var(--coffer-surface); border: 1px solid var(--coffer-border); border-radius: 14px; padding: 4px 16px; margin-bottom: 16px; }
.swagger-ui .opblock-tag, .swagger-ui .opblock-tag a.nostyle, .swagger-ui .opblock-tag span { color: var(--coffer-text); }
.swagger-ui .opblock-tag { border-bottom: 1px solid var(--coffer-border); font-size: 20px; font-weight: 650; }
.swagger-ui .opblock { border-radius: 10px; box-shadow: none; }
.swagger-ui .opblock .opblock-summary-method { border-radius: 6px; font-weight: 700; }
.swagger-ui .btn { border-radius: 8px; box-shadow: none; }
.swagger-ui .btn.execute { background: var(--coffer-accent); border-color: var(--coffer-accent); }
.swagger-ui section.models { background: var(--coffer-surface); border: 1px solid var(--coffer-border); border-radius: 14px; }
.swagger-ui .scheme-container { background: transparent; box-shadow: none; padding: 0 0 12px; }
`;

export const docsTheme = {
  title: 'Coffer · API reference',
  css: [{ filename: 'coffer.css', content: CSS }],
  js: [{ filename: 'coffer.js', content: HEADER_JS }],
};
