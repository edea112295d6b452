// i18n is read from the literal values; `locales` names the translations that are built (de is not).
const defaultLocale = 'en';

export default {
  url: 'https://gears.example.com',
  baseUrl: '/',
  i18n: {
    defaultLocale,
    locales: [defaultLocale, 'fr', 'pt-BR'],
    localeConfigs: { fr: { htmlLang: 'fr-FR' } },
  },
};
