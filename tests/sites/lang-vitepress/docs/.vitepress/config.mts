import { defineConfig } from 'vitepress'

export default defineConfig({
  lang: 'en-US',
  title: 'Sprockets',
  locales: {
    root: { label: 'English' },
    fr: { label: 'Français', lang: 'fr', link: '/fr/' },
    'pt-br': { label: 'Português', themeConfig: { nav: [{ text: 'Guia', link: '/pt-br/guide/setup' }] } },
  },
  markdown: { languages: [] },
})
