// A Docusaurus configuration is code: pgcite reads none of it and uses the documented defaults.
export default {url: 'https://gadgets.example.com', baseUrl: '/'};
