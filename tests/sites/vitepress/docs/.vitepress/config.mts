export default {title: 'Sprockets'}
