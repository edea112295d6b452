// A Docusaurus configuration is code: pgcite reads only its literal values (i18n, trailingSlash).
export default {url: 'https://gadgets.example.com', baseUrl: '/'};
